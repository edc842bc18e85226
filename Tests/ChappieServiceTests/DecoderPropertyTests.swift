import ChappieFuzzing
import ChappieTestSupport
import Foundation
import Testing

/// The fuzz targets of `make fuzz`, each fed a few thousand hostile values made from the real-shaped
/// fixtures: numbers at the ends of every range, control characters, cut and flipped bytes, deep
/// nesting. Seeded, so a failure names an input that fails again.
@Suite("Every decoder of outside input survives generated hostile values")
struct DecoderPropertyTests {
    @Test("No decoder crashes or breaks a promise", arguments: FuzzTarget.allCases)
    func hostileValues(_ target: FuzzTarget) throws {
        var inputs = HostileInputs(seed: target.rawValue.utf8.reduce(14_695_981_039_346_656_037) { ($0 ^ UInt64($1)) &* 1_099_511_628_211 })
        let seeds = try Self.seeds(for: target)
        var failures: [String] = []
        for _ in 0..<3000 {
            let input = inputs.next(from: seeds, target: target)
            for broken in target.run(input) where failures.count < 5 {
                failures.append("\(broken) — input (base64): \(input.prefix(400).base64EncodedString())")
            }
        }
        #expect(failures.isEmpty, "\(target.rawValue): \(failures.joined(separator: "\n"))")
    }

    @Test(
        "Inputs that broke a decoder stay fixed",
        arguments: [
            // usage-reply: limit_window_seconds of 2^63−1 trapped on `+ 59` (issue 26, break 7).
            (FuzzTarget.usageReply, #"{"rate_limit":{"primary_window":{"used_percent":1,"limit_window_seconds":9223372036854775807}}}"#),
            (FuzzTarget.usageReply, #"{"rate_limit":{"primary_window":{"used_percent":1e308,"reset_at":-9223372036854775808}}}"#),
            (FuzzTarget.jwtClaims, "e30.eyJleHAiOjFlMzA4LCJpYXQiOi05MjIzMzcyMDM2ODU0Nzc1ODA4fQ.c2ln"),
            (FuzzTarget.deviceCodeReply, #"{"device_auth_id":"d","user_code":"U","interval":1e308,"expires_at":"9999-12-31T23:59:59Z"}"#),
            (
                FuzzTarget.rateLimitHeaders,
                "x-codex-primary-used-percent: 1e308\nx-codex-primary-window-minutes: 9223372036854775807\nx-codex-primary-reset-at: nan"
            ),
            // jwt-claims, found by make fuzz: ")" and NULs made the check itself match "found 1)".
            (FuzzTarget.jwtClaims, ")" + String(repeating: "\u{0}", count: 91)),
            // command-line, found by make fuzz: CRs inside double quotes.
            (FuzzTarget.commandLine, "Ite\"se\r\r''\u{07F3}\r\""),
            // front-reader, found by make fuzz: JSON that JSONDecoder refuses (`0e6`).
            (FuzzTarget.frontReader, "0e6"),
        ])
    func regressions(_ target: FuzzTarget, _ input: String) {
        let broken = target.run(Data(input.utf8))
        #expect(broken.isEmpty, "\(broken)")
    }

    /// Real-shaped inputs for each target, which the generator mutates.
    static func seeds(for target: FuzzTarget) throws -> [Data] {
        func fixtures(_ names: String...) throws -> [Data] { try names.map(Fixtures.data) }
        let token = try JSONSerialization.jsonObject(with: Fixtures.data("token-response.json")) as? [String: Any] ?? [:]
        switch target {
        case .jwtClaims:
            return ["id_token", "access_token"].compactMap { token[$0] as? String }.map { Data($0.utf8) }
        case .codexAuthFile: return try fixtures("codex-auth.json", "codex-auth-legacy.json")
        case .usageReply:
            return try fixtures("wham-usage-plus.json", "wham-usage-limit-reached.json", "wham-usage-nulls.json", "wham-usage-weekly-only.json")
                + [
                    Data(
                        #"{"type":"codex.rate_limits","rate_limits":{"primary":{"used_percent":12.5,"window_minutes":300,"reset_at":1795009120}}}"#
                            .utf8)
                ]
        case .codexRollout:
            return try ["0.147.0", "0.163.0"].map { try Data(contentsOf: Fixtures.codex.appendingPathComponent("rollout-\($0).jsonl")) }
        case .rateLimitHeaders: return try fixtures("responses-headers.txt", "usage-limit-reached-429.json", "usage-not-included-429.json")
        case .tokenReply:
            return try fixtures(
                "token-response.json", "refresh-response.json", "refresh-reused-401.json", "token-invalid-grant-400.json", "refresh-expired-401.json")
        case .deviceCodeReply: return try fixtures("device-usercode.json", "device-usercode-alias.json", "device-token-success.json")
        case .serverSentEvents: return try fixtures("responses-text.sse", "responses-tool-call.sse", "responses-cut.sse", "responses-failed.sse")
        case .webSocketFrames:
            // Each SSE event's data as an unmasked text frame, as the server sends them.
            let events = try fixtures("responses-text.sse").flatMap { String(decoding: $0, as: UTF8.self).components(separatedBy: "\n") }
                .filter { $0.hasPrefix("data: ") }.map { Data($0.dropFirst(6).utf8) }
            return [
                events.reduce(into: Data()) { frames, payload in
                    frames.append(0x81)
                    if payload.count < 126 {
                        frames.append(UInt8(payload.count))
                    } else {
                        frames.append(126)
                        frames.append(UInt8(payload.count >> 8))
                        frames.append(UInt8(payload.count & 0xFF))
                    }
                    frames.append(payload)
                }
            ]
        case .backupFile:
            return [
                Data(
                    #"chappie-backup 1\#n{"format":"chappie-backup","kdf":{"algorithm":"argon2id13","memLimit":67108864,"opsLimit":2,"salt":"AAAAAAAAAAAAAAAAAAAAAA=="},"version":1}\#nsealed"#
                        .utf8),
                Data(
                    #"{"version":1,"createdAt":"2026-11-23T00:00:00Z","chappieVersion":"t","accounts":[{"name":"a","idToken":"i","accessToken":"a","refreshToken":"r","createdAt":"2026-11-23T00:00:00Z","lastRefreshAt":"2026-11-23T00:00:00Z","reservePercent":10}],"settings":{}}"#
                        .utf8),
            ]
        case .socketRequest:
            return [
                Data(#"{"command":"token","account":"work","marginSeconds":300}"#.utf8),
                // A well-formed request padded past the socket's 64 KiB line limit.
                Data((#"{"command":"status""# + String(repeating: " ", count: 70_000) + "}\n").utf8),
            ]
        case .issuerKeys:
            // A 2048-bit modulus (odd, top bit set), named as the fixture's tokens name their key.
            let modulus = Data([0xC1] + [UInt8](repeating: 0x5A, count: 254) + [0x01]).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            let set = #"{"keys":[{"kty":"RSA","use":"sig","kid":"fixture","n":"\#(modulus)","e":"AQAB"}]}"#
            return ["id_token", "access_token"].compactMap { token[$0] as? String }.map { Data((set + "\n" + $0).utf8) }
        case .accountCheck:
            return ["wham-accounts-check.json", "wham-accounts-check-map.json"].compactMap { try? Fixtures.data($0) }
                + [Data(#"{"accounts":[{"id":"a","workspace_backend_origin":"https://[::1]:8443","account_routing_override":"us_cr"}]}"#.utf8)]
        case .resetCredits:
            return try fixtures("wham-reset-credits.json", "wham-reset-credits-consume.json") + [
                Data(#"[{"id":"a","status":"available","expires_at":1795000000}]"#.utf8), Data(#"{"result":{"outcome":"no_credit"}}"#.utf8),
            ]
        case .profile:
            return try fixtures("wham-profiles-me.json") + [
                Data(
                    #"{"stats":{"daily_usage_buckets":[{"start_date":"2024-02-29T00:00:00Z","tokens":1e20},{"start_date":"2023-02-29","tokens":5}]}}"#
                        .utf8)
            ]
        case .commandLine:
            return [
                Data(#"codex exec resume {session} "go on, \"now\"" 'it'\''s' a\ b"#.utf8), Data("notify-send 'chappie' \"$HOME\"\t\n".utf8),
            ]
        case .frontReader:
            return ["access_token", "id_token"].compactMap { token[$0] as? String }.map { Data($0.utf8) } + [
                try Fixtures.data("codex-auth.json"),
                Data(#"{"ok":true,"token":{"name":"w","accessToken":"a.b.c","expiresAt":1764000000,"fedramp":false,"warning":"\u00e9"}}"#.utf8),
                Data(#"{"ok":false,"error":"no account named x","exitCode":1}"#.utf8),
                Data(DaemonReplies.usage.utf8),
            ]
        case .httpRequest:
            return [
                Data("GET /metrics?x=1 HTTP/1.1\r\nHost: localhost:9464\r\nAuthorization: Bearer x\r\n\r\n".utf8),
                Data("POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\n\r\nhello".utf8),
            ]
        }
    }
}

/// A seeded generator of hostile variations of real inputs.
struct HostileInputs {
    private var state: UInt64

    init(seed: UInt64) { state = seed | 1 }

    /// Numbers no service sends, at the ends of every range.
    static let numbers = [
        "1e308", "-1e308", "9223372036854775807", "-9223372036854775808", "18446744073709551616", "1e-320", "-0", "0",
        "253402300800", "-1", "2147483648", "1.7976931348623157e308", "4294967296", "99999999999999999999999",
    ]
    /// Strings no service sends.
    static let strings = [
        "\u{1B}]2;x\u{07}", "\u{0}", "\u{FEFF}", String(repeating: "A", count: 70_000), "\u{202E}evil", "../../etc/passwd", "\u{D7FF}\u{FFFF}",
        "%00", "=cmd|' /C calc'!A0", "e30.e30.e30", "",
    ]

    private mutating func random(_ bound: Int) -> Int {
        // splitmix64
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return Int((z ^ (z >> 31)) % UInt64(max(1, bound)))
    }

    /// One variation of one of `seeds`.
    mutating func next(from seeds: [Data], target: FuzzTarget) -> Data {
        var data = seeds[random(seeds.count)]
        for _ in 0...random(3) { data = mutate(data) }
        if target == .jwtClaims, random(2) == 0 {
            // A payload of hostile JSON, properly encoded, so that the claims themselves are reached.
            let payload = mutate(
                Data(
                    #"{"exp":1795003600,"iat":1795000000,"email":"a@example.com","https://api.openai.com/auth":{"chatgpt_account_id":"x","chatgpt_plan_type":"plus"}}"#
                        .utf8))
            let encoded = payload.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            data = Data("e30.\(encoded).c2ln".utf8)
        }
        return data
    }

    private mutating func mutate(_ data: Data) -> Data {
        var text = String(decoding: data, as: UTF8.self)
        switch random(8) {
        case 0, 1:
            // Every number, or one, replaced by a hostile one.
            let numbers = Self.numberRanges(in: text)
            guard !numbers.isEmpty else { return Data(text.utf8) }
            let all = random(2) == 0
            for range in numbers.reversed() where all || random(numbers.count) == 0 {
                text.replaceSubrange(range, with: Self.numbers[random(Self.numbers.count)])
            }
            return Data(text.utf8)
        case 2:
            // A string value replaced by a hostile one.
            let quotes = text.indices.filter { text[$0] == "\"" }
            guard quotes.count >= 2 else { return data }
            let start = random(quotes.count - 1)
            let range = text.index(after: quotes[start])..<quotes[start + 1]
            let replacement = Self.strings[random(Self.strings.count)].replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(
                of: "\"", with: "\\\"")
            text.replaceSubrange(range, with: replacement)
            return Data(text.utf8)
        case 3:
            return data.prefix(random(data.count + 1))
        case 4:
            var bytes = [UInt8](data)
            for _ in 0...random(8) where !bytes.isEmpty { bytes[random(bytes.count)] ^= UInt8(1 << random(8)) }
            return Data(bytes)
        case 5:
            let depth = 1 + random(5000)
            return Data((String(repeating: "[", count: depth) + String(repeating: "]", count: depth)).utf8) + data
        case 6:
            var bytes = [UInt8](data)
            let at = random(bytes.count + 1)
            bytes.insert(contentsOf: [UInt8](Self.strings[random(Self.strings.count)].utf8.prefix(300)), at: at)
            return Data(bytes)
        default:
            return data + data.prefix(random(data.count + 1))
        }
    }

    /// The ranges of the JSON-looking numbers in `text`.
    private static func numberRanges(in text: String) -> [Range<String.Index>] {
        var ranges: [Range<String.Index>] = []
        var index = text.startIndex
        while index < text.endIndex {
            if text[index].isNumber || (text[index] == "-" && text.index(after: index) < text.endIndex && text[text.index(after: index)].isNumber) {
                var end = text.index(after: index)
                while end < text.endIndex, text[end].isNumber || ".eE+-".contains(text[end]) { end = text.index(after: end) }
                ranges.append(index..<end)
                index = end
            } else {
                index = text.index(after: index)
            }
        }
        return ranges
    }
}
