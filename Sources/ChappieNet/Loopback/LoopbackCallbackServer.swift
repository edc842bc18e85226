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
    }

    /// What to answer a request with, and whether to hand it on.
    package struct Answer: Sendable {
        /// The HTTP status.
        package var status: Int
        /// The page's text (HTML-escaped here).
        package var message: String
        /// Whether ``requests`` gets the request.
        package var deliver: Bool

        /// An answer.
        package init(status: Int, message: String, deliver: Bool) {
            self.status = status
            self.message = message
            self.deliver = deliver
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
            let server = try await LocalHTTPServer.listen(host: "127.0.0.1", ports: ports) { request in
                guard request.method == "GET" else {
                    return page(Answer(status: 405, message: "Only GET is answered here.", deliver: false))
                }
                let delivered = Request(path: request.path, query: request.query)
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

    /// The answer as a small HTML page.
    private static func page(_ answer: Answer) -> LocalHTTPServer.Response {
        let escaped = HTMLText.escaped(answer.message)
        return LocalHTTPServer.Response(
            status: answer.status, contentType: "text/html; charset=utf-8",
            text: "<!doctype html><meta charset=\"utf-8\"><title>chappie</title><p>\(escaped)</p>\n")
    }
}
