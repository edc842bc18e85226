import ChappieCore
import Foundation

/// A one-purpose HTTP listener on `127.0.0.1` for an OAuth redirect to come back to (the browser
/// sign-in's `http://localhost:PORT/auth/callback`): each `GET` is answered by `respond` with a
/// small HTML page and, when `respond` says so, handed to ``requests``. It never listens on
/// another address, reads no request body and closes each connection after answering.
package final class LoopbackCallbackServer: Sendable {
    /// A request the browser made: its path and its decoded query.
    package struct Request: Sendable {
        /// The path, such as `/auth/callback`.
        package var path: String
        /// The query's names and values, percent-decoded (the last of a repeated name wins).
        package var query: [String: String]
        /// The cookies the browser sent, by name.
        package var cookies: [String: String] = [:]
    }

    /// What to answer a request with, and whether to hand it on.
    package struct Answer: Sendable {
        /// The HTTP status.
        package var status: Int
        /// The page's text (HTML-escaped here).
        package var message: String
        /// Whether ``requests`` gets the request.
        package var deliver: Bool
        /// Where to send the browser on (a `302` with this `Location`).
        package var location: String?
        /// A cookie to set (`Set-Cookie`).
        package var setCookie: String?

        /// An answer.
        package init(status: Int, message: String, deliver: Bool, location: String? = nil, setCookie: String? = nil) {
            self.status = status
            self.message = message
            self.deliver = deliver
            self.location = location
            self.setCookie = setCookie
        }
    }

    /// No port could be listened on.
    package struct ListenFailure: Error, Sendable {
        /// Which ports, and why.
        package var message: String
    }

    /// The port it listens on.
    package var port: Int { server.port }
    /// The delivered requests, in order; it ends when the server is closed.
    package let requests: AsyncStream<Request>
    private let server: LocalHTTPServer
    private let continuation: AsyncStream<Request>.Continuation

    /// Listens on the first of `ports` that is free (0 picks any free port).
    ///
    /// - Throws: ``ListenFailure`` naming the ports when none is free.
    package static func listen(ports: [Int], respond: @escaping @Sendable (Request) -> Answer) async throws(ListenFailure) -> LoopbackCallbackServer {
        let (requests, continuation) = AsyncStream.makeStream(of: Request.self)
        do {
            let server = try await LocalHTTPServer.listen(host: "127.0.0.1", ports: ports, identifyingPeers: true) { request in
                // Another local user may have read this listener's URLs (a command line is public in
                // /proc): only connections of the user running chappie are served.
                // Root can read everything of ours anyway; a connection the kernel does not list (no
                // /proc/net/tcp in a sandbox) is left to the state and cookie checks.
                if let peer = request.peerUID, peer != getuid(), peer != 0 {
                    return page(Answer(status: 403, message: "This sign-in belongs to another user of this machine.", deliver: false))
                }
                guard request.method == "GET" else {
                    return page(Answer(status: 405, message: "Only GET is answered here.", deliver: false))
                }
                let delivered = Request(path: request.path, query: request.query, cookies: cookies(request.header("Cookie") ?? ""))
                let answer = respond(delivered)
                if answer.deliver { continuation.yield(delivered) }
                return page(answer)
            }
            return LoopbackCallbackServer(requests: requests, server: server, continuation: continuation)
        } catch {
            continuation.finish()
            throw ListenFailure(message: "\(error.message); is another sign-in running?")
        }
    }

    private init(requests: AsyncStream<Request>, server: LocalHTTPServer, continuation: AsyncStream<Request>.Continuation) {
        self.requests = requests
        self.server = server
        self.continuation = continuation
    }

    /// Stops listening and ends ``requests``.
    package func close() async {
        await server.close()
        continuation.finish()
    }

    /// The answer as a small HTML page (or a redirect).
    private static func page(_ answer: Answer) -> LocalHTTPServer.Response {
        let escaped = HTMLText.escaped(answer.message)
        var headers: [(name: String, value: String)] = []
        if let location = answer.location { headers.append((name: "Location", value: location)) }
        if let cookie = answer.setCookie { headers.append((name: "Set-Cookie", value: cookie)) }
        return LocalHTTPServer.Response(
            status: answer.status, contentType: "text/html; charset=utf-8",
            text: "<!doctype html><meta charset=\"utf-8\"><title>chappie</title><p>\(escaped)</p>\n", headers: headers)
    }

    /// A `Cookie` header's pairs (`a=1; b=2`).
    private static func cookies(_ header: String) -> [String: String] {
        var cookies: [String: String] = [:]
        for pair in header.split(separator: ";") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { cookies[parts[0].trimmingCharacters(in: .whitespaces)] = parts[1].trimmingCharacters(in: .whitespaces) }
        }
        return cookies
    }
}
