import ArgumentParser
import ChappieEmulator
import Foundation
import Logging

/// `chappie-emulator`: runs the OpenAI stand-in as a process, for `make demo` and black-box tests.
@main
struct EmulatorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chappie-emulator",
        abstract: "A local stand-in for auth.openai.com and chatgpt.com/backend-api.",
        discussion: """
            Prints "listening on http://HOST:PORT" (https with --tls) as its first line, then serves \
            until SIGTERM or SIGINT. Point chappie at it with --issuer http://HOST:PORT \
            --backend http://HOST:PORT/backend-api. With --tls it makes a certificate authority and \
            a server certificate for 127.0.0.1, ::1 and localhost at start-up; give clients the \
            authority (--tls-ca-out FILE) to trust.
            """)

    @Flag(help: "Serve HTTPS and wss instead of plain HTTP, with certificates made at start-up.")
    var tls = false

    @Option(name: .customLong("tls-ca-out"), help: ArgumentHelp("Write the certificate authority's PEM here (with --tls).", valueName: "file"))
    var tlsAuthorityOut: String?

    @Option(help: "The loopback address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "The port; 0 picks a free one.")
    var port = 0

    @Option(name: .customLong("access-token-ttl"), help: "Access-token lifetime in seconds.")
    var accessTokenTTL = 3600

    @Option(name: .customLong("refresh-token-ttl"), help: "Refresh-token lifetime in seconds.")
    var refreshTokenTTL = 30 * 86400

    @Option(name: .customLong("device-code-interval"), help: "Polling interval (seconds) the usercode reply asks for.")
    var deviceCodeInterval = 5

    @Option(name: .customLong("device-code-lifetime"), help: "Seconds a device code stays valid.")
    var deviceCodeLifetime = 900

    @Flag(name: .customLong("auto-approve"), help: "Approve every device code by itself, each as a new account.")
    var autoApprove = false

    @Option(name: .customLong("auto-approve-delay"), help: "Seconds before an auto-approved code is approved.")
    var autoApproveDelay = 2.0

    @Flag(help: "Log every request.")
    var verbose = false

    @Flag(
        name: .customLong("stop-when-stdin-closes"),
        help: "Stop (as on SIGTERM) when standard input ends: a parent that holds its other end and dies takes the emulator with it.")
    var stopWhenStdinCloses = false

    func validate() throws {
        guard ["127.0.0.1", "localhost", "::1"].contains(host) || host.hasPrefix("127.") else {
            throw ValidationError("--host must be a loopback address (127.0.0.1, ::1 or localhost): the emulator is for this machine only.")
        }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be between 0 and 65535.") }
        if tlsAuthorityOut != nil, !tls { throw ValidationError("--tls-ca-out needs --tls.") }
        guard accessTokenTTL > 0, refreshTokenTTL > 0, deviceCodeLifetime > 0, deviceCodeInterval >= 0, autoApproveDelay >= 0 else {
            throw ValidationError("lifetimes must be positive, and the interval and delay not negative.")
        }
    }

    func run() async throws {
        var logger = Logger(label: "chappie-emulator")
        logger.logLevel = verbose ? .debug : .warning
        let configuration = EmulatorConfiguration(
            host: host, port: port,
            accessTokenLifetime: .seconds(accessTokenTTL), refreshTokenLifetime: .seconds(refreshTokenTTL),
            deviceCodeLifetime: .seconds(deviceCodeLifetime), deviceCodePollInterval: deviceCodeInterval,
            autoApprove: autoApprove, autoApproveDelay: .milliseconds(Int(autoApproveDelay * 1000)),
            tls: tls ? try EmulatorTLS.generate() : nil)
        if let authority = configuration.tls?.authorityPEM, let tlsAuthorityOut {
            // Written before the address is printed: a client that reads the first line finds it.
            try Data(authority.utf8).write(to: URL(fileURLWithPath: tlsAuthorityOut), options: .atomic)
        }
        let host = self.host.contains(":") ? "[\(self.host)]" : self.host
        if stopWhenStdinCloses {
            // A thread of its own: the read blocks until the parent's end of the pipe is closed.
            Thread {
                var byte: UInt8 = 0
                while read(STDIN_FILENO, &byte, 1) > 0 {}
                kill(getpid(), SIGTERM)
            }.start()
        }
        try await Emulator(configuration: configuration, logger: logger).run(stopsOnSignals: true) { port in
            FileHandle.standardOutput.write(Data("listening on \(configuration.scheme)://\(host):\(port)\n".utf8))
        }
    }
}
