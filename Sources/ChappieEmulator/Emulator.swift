import Foundation
import HTTPTypes
import Hummingbird
public import Logging
import ServiceLifecycle
import UnixSignals

/// A local stand-in for `auth.openai.com` and `chatgpt.com/backend-api`, following docs/protocol.md.
///
/// It serves the issuer's paths (`/api/accounts/deviceauth/*`, `/oauth/*`) and the backend's
/// (`/backend-api/wham/usage`, `/backend-api/codex/responses` over HTTP/SSE and WebSocket,
/// `/backend-api/codex/models`) on one port, plus a control API under `/_emulator/`. Request bodies
/// sent with `Content-Encoding: zstd` or `gzip` are decoded. Point chappie at it with `--issuer http://127.0.0.1:PORT` and
/// `--backend http://127.0.0.1:PORT/backend-api`.
///
/// ```swift
/// let emulator = Emulator()
/// try await emulator.run { port in print("listening on", port) }  // until the task is cancelled
/// ```
public final class Emulator: Sendable {
    /// The configuration the emulator was made with.
    public let configuration: EmulatorConfiguration
    private let state: EmulatorState
    private let logger: Logger

    /// Creates an emulator; it listens once ``run(stopsOnSignals:onListening:)`` is called.
    ///
    /// - Parameters:
    ///   - configuration: Address, lifetimes and behaviour.
    ///   - logger: Where the server logs; by default warnings and errors only.
    public init(configuration: EmulatorConfiguration = EmulatorConfiguration(), logger: Logger? = nil) {
        self.configuration = configuration
        self.state = EmulatorState(configuration: configuration)
        self.logger =
            logger
            ?? {
                var logger = Logger(label: "chappie-emulator")
                logger.logLevel = .warning
                return logger
            }()
    }

    /// Serves until the calling task is cancelled, or until SIGTERM or SIGINT when `stopsOnSignals`.
    ///
    /// Cancellation shuts the server down gracefully (open requests may finish) for at most two
    /// seconds, then stops it outright.
    ///
    /// - Parameters:
    ///   - stopsOnSignals: Whether SIGTERM and SIGINT stop the server gracefully (for a process).
    ///   - onListening: Called once with the bound port (useful with port 0).
    public func run(
        stopsOnSignals: Bool = false,
        onListening: @escaping @Sendable (Int) async -> Void = { _ in }
    ) async throws {
        let backend = BackendRoutes(state: state)
        let webSocket = WebSocketRoutes(state: state, backend: backend)
        let tls = try configuration.tls?.serverContext()
        let router = makeRouter(backend: backend)
        // The address is announced once every listener listens: a client that reads it may use
        // the second one's origin at once.
        let announcement = Announcement(listeners: tls == nil ? 1 : 2, onListening: onListening)
        let app = Application(
            router: router,
            server: EmulatorChannel.builder(webSocket: webSocket, tls: tls),
            configuration: ApplicationConfiguration(address: .hostname(configuration.host, port: configuration.port)),
            onServerRunning: { channel in await announcement.up(port: channel.localAddress?.port ?? 0) },
            logger: logger)
        var services: [any Service] = [app]
        if tls != nil {
            // A second listener, as a region-pinned workspace's origin: `wham/accounts/check` names
            // it for an account given a routing override (POST /_emulator/accounts/ID/routing).
            let state = self.state, host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
            services.append(
                Application(
                    router: router,
                    server: EmulatorChannel.builder(webSocket: webSocket, tls: tls),
                    configuration: ApplicationConfiguration(address: .hostname(configuration.host, port: 0)),
                    onServerRunning: { channel in
                        await state.setRegionalOrigin("https://\(host):\(channel.localAddress?.port ?? 0)")
                        await announcement.up(port: nil)
                    },
                    logger: logger))
        }
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: services, gracefulShutdownSignals: stopsOnSignals ? [.sigterm, .sigint] : [], logger: logger))
        // Run the group outside this task's cancellation, so that cancelling means "shut down
        // gracefully" rather than tearing every connection down mid-response.
        let running = Task { try await group.run() }
        try await withTaskCancellationHandler {
            try await running.value
        } onCancel: {
            Task { [state] in
                // Held requests would hold the shutdown up for ever.
                _ = await state.release()
                await group.triggerGracefulShutdown()
                try? await Task.sleep(for: .seconds(2))
                running.cancel()
            }
        }
    }

    private func makeRouter(backend: BackendRoutes) -> Router<EmulatorRequestContext> {
        let router = Router(context: EmulatorRequestContext.self)
        let issuer = IssuerRoutes(state: state)
        let control = ControlRoutes(state: state)

        route(router, .get, "/.well-known/openid-configuration") { request, _, _ in
            issuer.discovery(origin: self.origin(of: request))
        }
        route(router, .get, "/.well-known/jwks.json") { _, _, _ in
            .json(200, await self.state.jwks)
        }
        route(router, .post, "/api/accounts/deviceauth/usercode") { request, body, _ in
            await issuer.userCode(RequestFields(body: body, contentType: request.headers[.contentType]))
        }
        route(router, .post, "/api/accounts/deviceauth/token") { request, body, _ in
            await issuer.pollToken(RequestFields(body: body, contentType: request.headers[.contentType]))
        }
        route(router, .get, "/oauth/authorize") { request, _, _ in
            await issuer.authorize(query: Self.query(of: request))
        }
        route(router, .post, "/oauth/token") { request, body, _ in
            await issuer.token(RequestFields(body: body, contentType: request.headers[.contentType]), origin: self.origin(of: request))
        }
        route(router, .post, "/oauth/revoke") { request, body, _ in
            await issuer.revoke(RequestFields(body: body, contentType: request.headers[.contentType]))
        }
        authenticatedRoute(router, backend, .get, "/backend-api/wham/usage") { _, account, _, _ in backend.usage(account: account) }
        authenticatedRoute(router, backend, .get, "/backend-api/wham/accounts/check") { request, account, _, _ in
            backend.accountCheck(account: account, origin: self.origin(of: request))
        }
        authenticatedRoute(router, backend, .get, "/backend-api/wham/profiles/me") { _, account, _, _ in await backend.profile(account: account) }
        authenticatedRoute(router, backend, .get, "/backend-api/wham/rate-limit-reset-credits") { _, account, _, _ in
            backend.resetCredits(account: account)
        }
        authenticatedRoute(router, backend, .post, "/backend-api/wham/rate-limit-reset-credits/consume") { _, account, body, _ in
            await backend.consumeResetCredit(account: account, body: body)
        }
        authenticatedRoute(router, backend, .post, "/backend-api/codex/responses") { _, account, body, fault in
            await backend.responses(account: account, body: body, fault: fault)
        }

        authenticatedRoute(router, backend, .get, "/backend-api/codex/models") { _, _, _, _ in backend.models() }

        route(router, .post, "/_emulator/device/approve", control: true) { request, body, _ in
            await control.approve(RequestFields(body: body, contentType: "application/json"))
        }
        route(router, .post, "/_emulator/device/deny", control: true) { _, body, _ in
            await control.deny(RequestFields(body: body, contentType: "application/json"))
        }
        route(router, .post, "/_emulator/device/next", control: true) { _, body, _ in
            await control.queueApproval(RequestFields(body: body, contentType: "application/json"))
        }
        route(router, .get, "/codex/device") { _, _, _ in
            Reply(
                status: 200, headers: [("Content-Type", "text/html; charset=utf-8")],
                body: .bytes(
                    Data(
                        "<!doctype html><title>Device sign-in</title><p>chappie-emulator: codes are approved through /_emulator/device/approve, or by --auto-approve.</p>"
                            .utf8)))
        }
        route(router, .get, "/_emulator/accounts", control: true) { _, _, _ in await control.accounts() }
        route(router, .post, "/_emulator/accounts/:account/usage", control: true) { request, body, _ in
            await control.setUsage(
                accountID: Self.pathComponent(of: request, at: 3), RequestFields(body: body, contentType: "application/json"))
        }
        route(router, .post, "/_emulator/accounts/:account/reset-credits", control: true) { request, body, _ in
            await control.grantResetCredits(
                accountID: Self.pathComponent(of: request, at: 3), RequestFields(body: body, contentType: "application/json"))
        }
        route(router, .post, "/_emulator/accounts/:account/routing", control: true) { request, body, _ in
            await control.setRouting(
                accountID: Self.pathComponent(of: request, at: 3), RequestFields(body: body, contentType: "application/json"))
        }
        route(router, .post, "/_emulator/faults", control: true) { _, body, _ in
            await control.addFault(RequestFields(body: body, contentType: "application/json"))
        }
        route(router, .delete, "/_emulator/faults", control: true) { _, _, _ in await control.clearFaults() }
        route(router, .post, "/_emulator/release", control: true) { _, _, _ in
            .json(200, .object([("released", .int(await self.state.release()))]))
        }
        // The body (a JSON object) as the payload of a JWT the issuer signed: {"jwt": "…"}.
        route(router, .post, "/_emulator/sign", control: true) { _, body, _ in
            guard case .object? = try? JSONDecoder().decode(JSONInput.self, from: body) else {
                return .json(400, .object([("error", .string("the body must be a JSON object"))]))
            }
            return .json(200, .object([("jwt", .string(await self.state.sign(payload: body)))]))
        }
        route(router, .post, "/_emulator/tools/script", control: true) { _, body, _ in
            await control.queueToolScript(RequestFields(body: body, contentType: "application/json"))
        }
        route(router, .delete, "/_emulator/tools/script", control: true) { _, _, _ in await control.clearToolScripts() }
        route(router, .get, "/_emulator/stats", control: true) { _, _, _ in await control.stats() }
        route(router, .get, "/_emulator/drip", control: true) { request, _, _ in control.drip(query: Self.query(of: request)) }
        // A webhook receiver for chappie's alerts: the bodies, in order; `fail` makes the next N answer 503.
        route(router, .post, "/_emulator/webhooks", control: true) { _, body, _ in
            await self.state.receiveWebhook(body) ? .json(200, .object([("ok", .bool(true))])) : .json(503, .object([("ok", .bool(false))]))
        }
        route(router, .get, "/_emulator/webhooks", control: true) { _, _, _ in
            .json(200, .array(await self.state.webhookBodies().map { .string(String(decoding: $0, as: UTF8.self)) }))
        }
        route(router, .post, "/_emulator/webhooks/fail", control: true) { _, body, _ in
            let count = RequestFields(body: body, contentType: "application/json")?.number("count") ?? 1
            guard count.isFinite, count >= 0, count <= 1000 else { return .json(400, .object([("error", .string("count must be 0 to 1000"))])) }
            await self.state.failWebhooks(Int(count))
            return .json(200, .object([("failing", .int(Int(count)))]))
        }
        route(router, .post, "/_emulator/authorize/deny", control: true) { _, body, _ in
            await control.denyNextAuthorization(RequestFields(body: body, contentType: "application/json"))
        }
        return router
    }

    /// Registers a handler behind the fault injector (control routes are never faulted).
    /// A backend route that needs a live access token and, if sent, the matching
    /// `ChatGPT-Account-Id`; anything else gets the backend's refusal.
    private func authenticatedRoute(
        _ router: Router<EmulatorRequestContext>, _ backend: BackendRoutes, _ method: HTTPRequest.Method, _ path: String,
        _ handler: @escaping @Sendable (Request, EmulatedAccount, Data, Fault.Kind?) async -> Reply
    ) {
        route(router, method, path) { request, body, fault in
            switch await backend.authenticate(
                authorization: request.headers[.authorization], accountHeader: request.headers[Self.accountIDHeader])
            {
            case .success(let account): await handler(request, account, body, fault)
            case .failure(let refusal): refusal.reply
            }
        }
    }

    private func route(
        _ router: Router<EmulatorRequestContext>, _ method: HTTPRequest.Method, _ path: String, control: Bool = false,
        _ handler: @escaping @Sendable (Request, Data, Fault.Kind?) async -> Reply
    ) {
        let state = self.state
        router.on(RouterPath(path), method: method) { request, context -> Response in
            var request = request
            if !control {
                await state.note(
                    path: request.uri.path, originator: request.headers[HTTPField.Name("originator")!], userAgent: request.headers[.userAgent],
                    routingOverride: request.headers[HTTPField.Name("x-openai-account-routing-override")!], authority: request.head.authority)
            }
            let fault = control ? nil : await state.admit(path: request.uri.path, clientPort: context.clientPort)
            switch fault {
            case .latency(let seconds)?:
                try await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
            case .hold?:
                await state.hold()
            case .drop?:
                // A status line, then the connection ends mid-body: what a client sees when the
                // network fails on the way (a one-byte body would arrive whole, and look like an answer).
                return Reply(status: 200, headers: [], body: .bytes(Data(repeating: 0x20, count: 64))).response(truncate: true)
            case .status(let status, let body, let retryAfter)?:
                var reply =
                    body.map { Reply(status: status, headers: [("Content-Type", "application/json")], body: .bytes(Data($0.utf8))) }
                    ?? Reply.openAIError(status, message: "Injected failure (status \(status)).", type: "server_error", code: nil)
                if let retryAfter { reply.headers.append(("Retry-After", retryAfter)) }
                return reply.response(truncate: false)
            default:
                break
            }
            let buffer = try await request.collectBody(upTo: 4 << 20)
            let body: Data
            switch Result(catching: { () throws(RequestBodyDecoding.Failure) -> Data in
                try RequestBodyDecoding.decode(Data(buffer.readableBytesView), contentEncoding: request.headers[.contentEncoding])
            }) {
            case .success(let decoded):
                body = decoded
                if let encoding = request.headers[.contentEncoding] { await state.recordEncoding(encoding) }
            case .failure(let failure): return Reply.openAIError(400, message: failure.message, code: "invalid_request").response(truncate: false)
            }
            let reply = await handler(request, body, fault).applying(fault)
            if case .truncated? = fault { return reply.response(truncate: true) }
            return reply.response(truncate: false)
        }
    }

    private static let accountIDHeader = HTTPField.Name("ChatGPT-Account-Id")!

    /// The query parameters, decoded (the last of a repeated name wins).
    private static func query(of request: Request) -> [String: String] {
        var query: [String: String] = [:]
        for (key, value) in request.uri.queryParameters { query[String(key)] = String(value) }
        return query
    }

    /// `http://host:port` as the client addressed the emulator.
    private func origin(of request: Request) -> String {
        "\(configuration.scheme)://" + (request.head.authority ?? "127.0.0.1")
    }

    private static func pathComponent(of request: Request, at index: Int) -> String {
        let parts = request.uri.path.split(separator: "/")
        return parts.count > index - 1 ? String(parts[index - 1]).removingPercentEncoding ?? "" : ""
    }
}

/// Calls `onListening` with the main listener's port once every listener is up.
private actor Announcement {
    private var waiting: Int
    private var port: Int?
    private let onListening: @Sendable (Int) async -> Void

    init(listeners: Int, onListening: @escaping @Sendable (Int) async -> Void) {
        waiting = listeners
        self.onListening = onListening
    }

    /// One listener is up: the main one with its port, another with `nil`.
    func up(port: Int?) async {
        if let port { self.port = port }
        waiting -= 1
        if waiting == 0, let main = self.port { await onListening(main) }
    }
}
