import ChappieSystem
import ChappieCore
import ChappieService
import Foundation

/// Shows the code and a waiting line: live on a terminal, a plain line each minute otherwise.
actor SignInDisplay {
    private let live: Bool
    private let json: Bool
    private var ticker: Task<Void, Never>?

    init(live: Bool, json: Bool) {
        self.live = live
        self.json = json
    }

    func show(_ state: ChappieDeviceLinkState) {
        switch state {
        case .waitingForApproval(let code, let url, let expiresAt, _):
            guard ticker == nil else { return }
            // The code goes to standard error so that --json output stays one JSON document.
            write(
                """

                To sign in, open:  \(url.absoluteString)
                and enter the code: \(code)

                The code expires at \(Formatting.localTime(expiresAt)). Never share it: whoever enters it gets your account.

                """)
            startTicker(waitingFor: "approval", until: expiresAt)
        case .exchangingCode:
            stopTicker()
            write("Approved. Fetching the tokens…\n")
        default:
            break
        }
    }

    func show(_ step: TokenService.BrowserSignInStep) {
        switch step {
        case .openURL(let url, let opened, let expiresAt):
            guard ticker == nil else { return }
            write(
                """

                To sign in, open this in a browser on this machine\(opened ? " (it should have opened)" : ""):
                \(url.absoluteString)

                chappie waits for the browser until \(Formatting.localTime(expiresAt)).

                """)
            startTicker(waitingFor: "the browser", until: expiresAt)
        case .exchangingCode:
            stopTicker()
            write("Signed in. Fetching the tokens…\n")
        }
    }

    /// A live waiting line on a terminal, a plain line each minute otherwise.
    private func startTicker(waitingFor what: String, until expiresAt: Date) {
        let start = Date()
        let live = self.live
        ticker = Task {
            var tick = 0
            while !Task.isCancelled {
                let elapsed = Int(Date().timeIntervalSince(start)), left = max(0, Int(expiresAt.timeIntervalSinceNow))
                let line =
                    "Waiting for \(what)… \(elapsed / 60):\(String(format: "%02d", elapsed % 60)) elapsed, \(left / 60):\(String(format: "%02d", left % 60)) left"
                if live {
                    StandardStream.error.write("\r\u{1B}[2K\(line)")
                } else if tick % 60 == 0 {
                    StandardStream.error.write("\(line)\n")
                }
                tick += 1
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    func finish() {
        stopTicker()
    }

    private func stopTicker() {
        if let ticker {
            ticker.cancel()
            if live { StandardStream.error.write("\r\u{1B}[2K") }
        }
        ticker = nil
    }

    private nonisolated func write(_ text: String) {
        StandardStream.error.write(text)
    }
}
