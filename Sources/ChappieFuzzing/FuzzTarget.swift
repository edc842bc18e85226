package import ChappieSystem
import ChappieDaemonClient
package import ChappieFront
import Chappie
import CryptoExtras
import ChappieCore
import ChappieNet
import ChappieService
package import Foundation
import NIOCore
import NIOEmbedded
import NIOExtras
import NIOHTTP1
import NIOWebSocket

/// Every decoder of outside input, each fed arbitrary bytes: what `make fuzz` runs under libFuzzer
/// (with AddressSanitizer) and what `make test` runs on generated hostile values. A decoder may
/// refuse any input with its error; it may never crash, and what it accepts must hold the promises
/// chappie relies on (``run(_:)`` returns the broken ones).
package enum FuzzTarget: String, CaseIterable, Sendable {
    /// An id_token or access token's claims (`TokenClaims`).
    case jwtClaims = "jwt-claims"
    /// A Codex `auth.json`, as `accounts import` and the Codex-home adoption read it.
    case codexAuthFile = "auth-json"
    /// A `wham/usage` reply and a `codex.rate_limits` event.
    case usageReply = "usage-reply"
    /// The lines of a Codex rollout, as the daemon reads the rate limits in them.
    case codexRollout = "codex-rollout"
    /// `x-codex-*` rate-limit headers and a 429's body.
    case rateLimitHeaders = "rate-limit-headers"
    /// The token endpoint's replies: code exchange, refresh, OAuth error bodies.
    case tokenReply = "token-reply"
    /// The device-code endpoints' replies: the user code and an approved poll.
    case deviceCodeReply = "device-code-reply"
    /// A streamed reply's Server-Sent Events, fed in chunks.
    case serverSentEvents = "sse"
    /// WebSocket frames as the client's frame decoder reads them, and their text as events.
    case webSocketFrames = "websocket-frames"
    /// A backup file's header and payload.
    case backupFile = "backup-file"
    /// A request line to the daemon's Unix socket.
    case socketRequest = "socket-request"
    /// Bytes sent to a local HTTP listener (the dashboard, `/metrics`, the sign-in callback).
    case httpRequest = "http-request"
    /// The issuer's key set, then (after the first newline) a JWT checked against it.
    case issuerKeys = "issuer-keys"
    /// A `wham/accounts/check` reply (workspace routing discovery), read for the account `a`.
    case accountCheck = "accounts-check"
    /// A `wham/rate-limit-reset-credits` list, and the same bytes as a redemption's answer.
    case resetCredits = "reset-credits"
    /// A `wham/profiles/me` reply: the token history's days.
    case profile = "profile"
    /// A command line (`--resume`, an alert command) split into words; re-quoted, it splits the same.
    case commandLine = "command-line"
    /// What the front binary reads without Foundation: JSON (a credential, the daemon's reply) and
    /// an access token's `exp`, each against Foundation's reading of the same bytes.
    case frontReader = "front-reader"

    /// Feeds `data` to the target's decoders; returns the promises an accepted value broke.
    package func run(_ data: Data) -> [String] {
        var broken: [String] = []
        func require(_ condition: Bool, _ promise: @autoclosure () -> String) {
            if !condition { broken.append(promise()) }
        }
        func inRange(_ date: Date?) -> Bool { date.map { WireNumber.date(unixSeconds: $0.timeIntervalSince1970) != nil } ?? true }
        func check(_ window: ChappieUsageWindow?) {
            guard let window else { return }
            require((0...100).contains(window.usedPercent), "a window's use is within 0–100")
            require(window.windowMinutes.map { (1...WireNumber.longestSeconds / 60).contains($0) } ?? true, "a window's length is within range")
            require(inRange(window.resetsAt), "a reset time is within 1970–9999")
        }
        func check(_ snapshot: ChappieUsageLimitSnapshot?) {
            check(snapshot?.shortWindow)
            check(snapshot?.longWindow)
        }
        let text = String(decoding: data, as: UTF8.self)

        switch self {
        case .jwtClaims:
            do {
                let claims = try TokenClaims(jwt: text)
                require(inRange(claims.expiresAt) && inRange(claims.issuedAt), "claim times are within 1970–9999")
            } catch {
                // Byte for byte: Foundation's `contains` stops at a NUL, and found ")" in "found 1)".
                require(text.utf8.count < 12 || error.description.utf8.firstRange(of: text.utf8) == nil, "an error never holds the token")
            }
        case .codexAuthFile:
            if let file = try? CodexAuthFile.parse(data, from: URL(fileURLWithPath: "/fuzz/auth.json")) {
                require(inRange(file.accessTokenExpiresAt) && inRange(file.lastRefresh), "auth.json times are within 1970–9999")
                require(!file.credentials.refreshToken.isEmpty, "an accepted auth.json has a refresh token")
            }
        case .usageReply:
            for snapshot in (try? ChappieUsageLimitSnapshot.decodeUsage(data)) ?? [] { check(snapshot) }
            if let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] {
                check(ChappieUsageLimitSnapshot.fromRateLimitsEvent(object))
            }
        case .codexRollout:
            check(CodexRollout.newestRateLimits(in: text.split(separator: "\n"))?.snapshot)
        case .rateLimitHeaders:
            var headers = ChappieHTTPHeaders()
            for line in text.split(whereSeparator: \.isNewline) {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers.add(name: String(line[..<colon]), value: String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces))
            }
            check(ChappieUsageLimitSnapshot.fromHeaders { headers[$0] })
            if let limit = ChappieClient.usageLimit(data, headers: headers) {
                check(limit.rateLimit)
                require(inRange(limit.resetsAt), "a limit's reset is within 1970–9999")
                require(limit.resetsInSeconds.map { $0 >= 0 && $0.isFinite } ?? true, "a limit resets in a finite time")
            }
            _ = ChappieHTTPHeaders.retryAfter(text)
        case .tokenReply:
            _ = try? OAuthClient.exchangedTokens(from: data)
            if let reply = try? OAuthClient.refreshedTokens(from: data), let account = Self.account {
                _ = TokenRefresher.mismatch(reply, for: account)
            }
            let error = OAuthErrorBody(data)
            let redacted = OAuthErrorBody.redacted(data)
            _ = ChappieAuthError(tokenEndpointDescription: redacted)
            _ = error.description
            // A server's body as a failure's body: only chappie's own last line may set a wait, within a day.
            for status in [400, 429, 503] {
                let failure = ChappieAuthError.tokenExchangeFailed(statusCode: status, body: text)
                require(failure.retryAfter.map { (0...86_400).contains($0) } ?? true, "a kept Retry-After is 0 to 86,400 s")
                require(status == 400 ? failure.retryAfter == nil : true, "a 4xx keeps no Retry-After")
                _ = failure.recovery.description
                _ = failure.errorDescription
            }
        case .deviceCodeReply:
            if let code = try? OAuthClient.deviceCode(from: data, serverDate: Date(timeIntervalSince1970: 1_795_000_000)) {
                require(code.interval >= .seconds(1) && code.interval <= .seconds(60), "the poll interval is 1–60 s")
                require(code.lifetime.map { $0 >= .zero } ?? true, "a code's lifetime is not negative")
            }
            _ = try? OAuthClient.approval(from: data)
        case .serverSentEvents:
            var decoder = ServerSentEventDecoder()
            var offset = 0
            // The first bytes choose the chunk sizes, so that the fuzzer explores the splits too.
            let sizes = data.prefix(4).map { max(1, Int($0)) }
            var index = 0
            while offset < data.count {
                let size = sizes.isEmpty ? data.count : sizes[index % sizes.count]
                let chunk = data[offset..<min(data.count, offset + size)]
                for event in decoder.decode(Data(chunk)) {
                    if let object = (try? JSONSerialization.jsonObject(with: Data(event.data.utf8))) as? [String: Any] {
                        check(ChappieUsageLimitSnapshot.fromRateLimitsEvent(object))
                        if let usage = ChappieTokenUsage(wire: (object["response"] as? [String: Any])?["usage"]) {
                            let counts = [usage.inputTokens, usage.cachedInputTokens, usage.outputTokens, usage.reasoningTokens, usage.totalTokens]
                            require(counts.allSatisfy { $0 >= 0 }, "token counts are not negative")
                        }
                    }
                }
                offset += size
                index += 1
            }
            _ = decoder.finish()
        case .webSocketFrames:
            let channel = EmbeddedChannel()
            defer { _ = try? channel.finish() }
            guard (try? channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: 1 << 16)))) != nil else {
                return ["the frame decoder could not be set up"]
            }
            _ = try? channel.writeInbound(channel.allocator.buffer(bytes: data))
            while let frame = try? channel.readInbound(as: WebSocketFrame.self) {
                require(frame.length <= 1 << 16, "no frame is larger than the client accepts")
                guard frame.opcode == .text else { continue }
                var payload = frame.unmaskedData
                let text = payload.readString(length: payload.readableBytes) ?? ""
                if let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] {
                    check(ChappieUsageLimitSnapshot.fromRateLimitsEvent(object))
                }
            }
        case .backupFile:
            _ = try? BackupFile.parseHeader(data, path: "/fuzz/backup")
            if let payload = try? BackupFile.decodePayload(data, path: "/fuzz/backup") {
                for samples in (payload.usage ?? [:]).values { samples.forEach { check($0.snapshot) } }
            }
        case .socketRequest:
            if let request = DaemonRequest.decode(line: data) {
                _ = try? AccountName(request.account ?? "")
                _ = Duration.seconds(request.marginSeconds ?? 300)
            }
            // The bytes through the daemon socket's framing, as the server reads them: no line it
            // passes on is longer than the limit, in whatever pieces the bytes come.
            let channel = EmbeddedChannel()
            defer { _ = try? channel.finish() }
            let limit = DaemonSocketServer.maximumRequestBytes
            guard
                (try? channel.pipeline.syncOperations.addHandlers(
                    RequestLengthLimit(maximum: limit), ByteToMessageHandler(LineBasedFrameDecoder()))) != nil
            else {
                return ["the socket's framing could not be set up"]
            }
            let cut = data.isEmpty ? 0 : Int(data[data.startIndex]) % (data.count + 1)
            for piece in [data.prefix(cut), data.dropFirst(cut)] where !piece.isEmpty {
                _ = try? channel.writeInbound(channel.allocator.buffer(bytes: piece))
            }
            while let line = try? channel.readInbound(as: ByteBuffer.self) {
                require(line.readableBytes <= limit, "a line of \(line.readableBytes) bytes passed the \(limit)-byte limit")
            }
        case .issuerKeys:
            let (set, jwt) = text.firstIndex(of: "\n").map { (Data(text[..<$0].utf8), String(text[text.index(after: $0)...])) } ?? (data, "")
            let keys = TokenSignatures.keys(fromKeySet: set) ?? [:]
            if let token = SignedToken(jwt) {
                _ = token.refusal(issuer: URL(string: "https://auth.openai.com")!)
                if let key = keys[token.keyID] {
                    // Made of fuzz bytes, a signature cannot be a real key's over its own input.
                    require(!token.isSigned(by: key), "a token made of arbitrary bytes does not verify")
                }
            }
        case .resetCredits:
            for credit in ResetCreditsService.credits(data) ?? [] {
                require(!credit.id.isEmpty && credit.id.count <= 200, "an accepted credit has an id of 1–200 characters")
                require(!credit.id.unicodeScalars.contains { $0.value < 0x20 }, "a credit's id holds no control character")
                require(inRange(credit.expiresAt) && inRange(credit.grantedAt), "a credit's times are within 1970–9999")
            }
            _ = ResetCreditsService.outcome(data)
        case .profile:
            let days = DailyTokens.days(fromProfile: data) ?? []
            require(days.allSatisfy { DailyTokens.day($0.day) == $0.day }, "every accepted day is a real YYYY-MM-DD")
            require(days.allSatisfy { (0...DailyTokens.maximumPerDay).contains($0.tokens) }, "every count is within range")
            require(Set(days.map(\.day)).count == days.count, "a day at most once")
            require(zip(days, days.dropFirst()).allSatisfy { $0.day < $1.day }, "oldest first")
        case .commandLine:
            guard let words = try? CommandWords.split(String(decoding: data, as: UTF8.self)) else { break }
            require(!words.isEmpty, "an accepted line has a word")
            require(!words.contains { $0.contains("\0") }, "no word holds a NUL")
            // Quoted scalar by scalar, as the splitter reads: a quote that a combining mark follows is still a quote.
            let quoted = words.map { word in
                var scalars = String.UnicodeScalarView("'".unicodeScalars)
                for scalar in word.unicodeScalars {
                    if scalar == "'" { scalars.append(contentsOf: #"'\''"#.unicodeScalars) } else { scalars.append(scalar) }
                }
                scalars.append("'")
                return String(scalars)
            }.joined(separator: " ")
            require((try? CommandWords.split(quoted)) == words, "the words, quoted again, split the same")
        case .frontReader:
            if let value = JSONValue.parse(data) {
                require(Self.foundationJSON(data) == value, "JSON the front binary reads, Foundation reads the same")
            }
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .secondsSince1970
            let reply = try? decoder.decode(DaemonReply.self, from: data)
            switch DaemonTokenClient.outcome(reply: Array(data)) {
            case .token(let token):
                let theirs = reply?.token
                require(
                    reply?.ok == true && theirs?.name == token.name && theirs?.accessToken == token.accessToken
                        && theirs?.expiresAt == token.expiresAt.map { Date(timeIntervalSince1970: Double($0)) }
                        && theirs?.chatgptAccountID == token.chatgptAccountID && theirs?.fedramp == token.fedramp && theirs?.warning == token.warning,
                    "a daemon's token the front binary prints is the one the full binary reads")
            case .refused(let message, let exitCode):
                let refusal = reply.map { DaemonRefusal($0, otherwise: "the daemon gave no token") }
                require(
                    reply.map { !$0.ok || $0.token == nil } == true && refusal?.message == message && refusal?.exitCode == exitCode,
                    "a daemon's refusal the front binary prints is the one the full binary reads")
            case .noDaemon, .full:
                break
            }
            // The daemon's `usage` reply as `prompt` reads it: a line the front binary writes is the
            // full binary's line, for the active account and its reading, at one instant and zone.
            let now = Date(timeIntervalSince1970: 1_790_000_000)
            let utc = TimeZone(identifier: "UTC")!
            for format in [PromptLine.defaultFormat, "{plan} {left} {window}"] {
                let clock = { (seconds: Double, withDay: Bool) in
                    MinuteFormat.formatter(utc, format: withDay ? "EEE HH:mm" : "HH:mm").string(from: Date(timeIntervalSince1970: seconds))
                }
                guard
                    case .line(let line) = DaemonPromptReader.outcome(
                        reply: Array(data), format: format, now: now.timeIntervalSince1970, clock: clock)
                else { continue }
                let theirs = reply.flatMap { reply in reply.ok ? reply.accounts : nil }.map { accounts in
                    accounts.first(where: \.isActive).map { account in
                        PromptLine.render(format, account: account, reading: reply?.usage?[account.id]?.snapshot, timeZone: utc, now: now)
                    }
                }
                require(theirs == .some(line), "a prompt line the front binary writes is the one the full binary writes")
            }
            if let expiry = AccessTokenClaims.expiry(of: text) {
                require(
                    (try? TokenClaims(jwt: text))?.expiresAt == Date(timeIntervalSince1970: Double(expiry)),
                    "an exp the front binary reads is the full binary's")
            }
        case .accountCheck:
            let responses = URL(string: "https://chatgpt.com/backend-api/codex/responses")!
            for id in ["a", "4b0e8a46-6f3a-4d3e-9c1b-0c0de0f1a2b3", "9d2f6c1e-2b7a-4e44-8f0a-5a6b7c8d9e0f"] {
                guard let route = WorkspaceRoute.parse(data, accountID: id) else { continue }
                require(route.routingOverride.map { ["us", "us_cr"].contains($0) } ?? true, "an accepted override is us or us_cr")
                let url = route.applied(to: responses)
                require(url?.scheme == "https", "an accepted origin is https")
                require(url?.path == "/backend-api/codex/responses", "the Responses path is kept")
                require(url?.user == nil && url?.password == nil, "an accepted origin carries no credentials")
            }
        case .httpRequest:
            // NIO's HTTP/1 parser as the listener configures it, then what chappie reads of each head.
            let channel = EmbeddedChannel()
            defer { _ = try? channel.finish() }
            guard
                (try? channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .dropBytes)))) != nil
            else {
                return ["the HTTP parser could not be set up"]
            }
            _ = try? channel.writeInbound(channel.allocator.buffer(bytes: data))
            while let part = try? channel.readInbound(as: HTTPServerRequestPart.self) {
                guard case .head(let head) = part else { continue }
                let request = LocalHTTPServer.Request(head)
                _ = request.header("Host").map(MetricsEndpoint.hostName).map { ChappieHTTPClient.isLoopbackAddress(host: $0) }
                _ = MetricsEndpoint.presentedSecret(request.header("Authorization") ?? "")
            }
        }
        return broken
    }

    /// The account a refresh reply is checked against.
    private static let account = (try? AccountName("fuzz")).map { name in
        Account(
            id: 1, uuid: UUID(), name: name,
            info: ChappieAccountInfo(email: "fuzz@example.com", userID: "user-fuzz", accountID: "acct-fuzz", plan: .plus),
            status: .ok, accessTokenExpiresAt: nil, lastRefreshAt: nil, lastError: nil, codexHome: nil, reservePercent: nil,
            createdAt: Date(timeIntervalSince1970: 0), updatedAt: Date(timeIntervalSince1970: 0), isActive: false, maxLeases: 1)
    }

    /// Foundation's reading of JSON bytes, in the front binary's terms: `JSONDecoder`'s (through
    /// ``ChappieJSONValue``), which the full binary reads credentials and the daemon's replies with.
    package static func foundationJSON(_ data: Data) -> JSONValue? {
        func convert(_ value: ChappieJSONValue) -> JSONValue {
            switch value {
            case .null: .null
            case .bool(let flag): .bool(flag)
            case .number(let number): .number(number)
            case .string(let text): .string(text)
            case .array(let elements): .array(elements.map(convert))
            case .object(let members): .object(members.mapValues(convert))
            }
        }
        return (try? JSONDecoder().decode(ChappieJSONValue.self, from: data)).map(convert)
    }

}
