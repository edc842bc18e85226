import CZstd
import ChappieEmulator
import ChappieNet
import ChappieTestSupport
import CompressNIO
import Foundation
import NIOCore
import Testing

@Suite("Emulator: compressed request bodies and the model list, as the real Codex CLI sends and reads them (§8.3)")
struct RequestEncodingTests {
    private static let body =
        #"{"model":"gpt-5-codex","stream":true,"store":false,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"squeezed"}]}]}"#

    private func responses(_ emulator: RunningEmulator, _ tokens: IssuedTokens, body: Data, encoding: String) throws -> ChappieHTTPRequest {
        var request = emulator.request(
            "/backend-api/codex/responses", method: .post,
            headers: [
                "Authorization": "Bearer \(tokens.accessToken)", "Content-Type": "application/json", "Accept": "text/event-stream",
                "Content-Encoding": encoding,
            ])
        request.body = body
        return request
    }

    private func zstd(_ data: Data) -> Data {
        var output = [UInt8](repeating: 0, count: ZSTD_compressBound(data.count))
        let size = data.withUnsafeBytes { ZSTD_compress(&output, output.count, $0.baseAddress, data.count, 3) }
        return Data(output.prefix(size))
    }

    private func gzip(_ data: Data) throws -> Data {
        var buffer = ByteBuffer(bytes: data)
        return Data(try buffer.compress(with: .gzip()).readableBytesView)
    }

    @Test("zstd and gzip bodies are decoded on the responses endpoint; a corrupt or truncated one is a clear 400")
    func encodings() async throws {
        try await withEmulator { emulator in
            let tokens = try await emulator.signIn()
            for (encoding, encoded) in [("zstd", zstd(Data(Self.body.utf8))), ("gzip", try gzip(Data(Self.body.utf8)))] {
                let reply = try await emulator.client.execute(try responses(emulator, tokens, body: encoded, encoding: encoding))
                #expect(reply.status == 200, "\(encoding)")
                #expect(String(decoding: reply.body, as: UTF8.self).contains(#""delta":"squeezed""#), "\(encoding)")
            }
            let counted = try await emulator.json(emulator.request("/_emulator/stats")).json
            #expect(counted.int("encoded_request_bodies", "zstd") == 1)
            #expect(counted.int("encoded_request_bodies", "gzip") == 1)
            let truncated = zstd(Data(Self.body.utf8)).dropLast(4)
            for (encoding, body) in [
                ("zstd", Data(truncated)), ("zstd", Data("not zstd".utf8)), ("gzip", Data("not gzip".utf8)), ("br", Data(Self.body.utf8)),
            ] {
                let reply = try await emulator.json(try responses(emulator, tokens, body: body, encoding: encoding))
                #expect(reply.status == 400, "\(encoding)")
                #expect(reply.json.string("error", "message")?.isEmpty == false)
            }
        }
    }

    @Test("GET /backend-api/codex/models answers the ModelsResponse shape, to a signed-in client only")
    func models() async throws {
        try await withEmulator { emulator in
            let tokens = try await emulator.signIn()
            let path = "/backend-api/codex/models?client_version=0.147.0"
            let reply = try await emulator.json(emulator.request(path, headers: ["Authorization": "Bearer \(tokens.accessToken)"]))
            #expect(reply.status == 200)
            let models = try #require(reply.json.value(["models"]) as? [[String: Any]])
            #expect(models.compactMap { $0["slug"] as? String }.contains("gpt-5-codex"))
            for model in models {
                for field in ["display_name", "supported_reasoning_levels", "shell_type", "visibility", "base_instructions", "truncation_policy"] {
                    #expect(model[field] != nil, "\(field)")
                }
            }
            #expect(try await emulator.json(emulator.request(path)).status == 401)
        }
    }
}

@Suite("Emulator: the WebSocket endpoint's answers to bad input (§8.2)")
struct WebSocketEndpointTests {
    @Test("A refused upgrade carries its status; a frame that is not a response.create gets a wrapped 400 and the socket stays open")
    func badFrames() async throws {
        try await withEmulator { emulator in
            let tokens = try await emulator.signIn()
            var url = URLComponents(url: emulator.backendURL.appendingPathComponent("codex/responses"), resolvingAgainstBaseURL: false)!
            url.scheme = "ws"
            let headers: ChappieHTTPHeaders = ["Authorization": "Bearer \(tokens.accessToken)", "OpenAI-Beta": "responses_websockets=2026-02-06"]
            var withoutBeta = headers
            withoutBeta["OpenAI-Beta"] = nil
            await #expect { try await ChappieWebSocketClient().connect(url: url.url!, headers: withoutBeta) { _ in } } throws: { error in
                (error as? WebSocketUpgradeRefused)?.status == 400
            }
            var badBearer = headers
            badBearer["Authorization"] = "Bearer not-a-token"
            await #expect { try await ChappieWebSocketClient().connect(url: url.url!, headers: badBearer) { _ in } } throws: { error in
                (error as? WebSocketUpgradeRefused)?.status == 401
            }
            let replies = try await ChappieWebSocketClient().connect(url: url.url!, headers: headers) { session -> [String] in
                var replies: [String] = []
                for frame in ["not json", #"{"type":"response.append","input":[]}"#] {
                    try await session.send(frame)
                    if case .text(let text)? = try await session.receive() { replies.append(text) }
                }
                try await session.send(#"{"type":"response.create","model":"gpt-5-codex","stream":true,"input":[]}"#)
                while case .text(let text)? = try await session.receive() {
                    replies.append(text)
                    if text.contains(#""type":"response.completed""#) { break }
                }
                return replies
            }
            #expect(replies.prefix(2).allSatisfy { JSONDocument(Data($0.utf8)).int("status") == 400 })
            #expect(replies.last?.contains("response.completed") == true)
        }
    }
}
