import ChappieCore
import ChappieNet
public import Foundation

/// Where alerts go and when thresholds fire: the daemon's `--alert-webhook`, `--alert-command` and
/// `--alert-at`, else the machine's local settings (``LocalSettings``; never the team pool's
/// database, so that whoever can write the pool cannot make every machine run a command).
public struct AlertTargets: Sendable, Equatable {
    /// Webhooks, each sent every event as a JSON POST.
    public var webhooks: [URL]
    /// A command run with each event as JSON on its standard input, with no shell.
    public var command: [String]?
    /// The used percents that fire `threshold`, ascending.
    public var thresholds: [Double]

    /// The thresholds unless told otherwise.
    public static let defaultThresholds: [Double] = [80, 95, 100]

    /// Targets; by default none, with the default thresholds.
    public init(webhooks: [URL] = [], command: [String]? = nil, thresholds: [Double] = defaultThresholds) {
        self.webhooks = webhooks
        self.command = command
        self.thresholds = thresholds
    }

    /// Whether any alert is sent at all.
    public var isEmpty: Bool { webhooks.isEmpty && command == nil }

    /// A webhook URL: `https`, or `http` to a loopback address only (an alert names accounts and
    /// their use; it does not cross a network in clear).
    ///
    /// - Throws: ``ServiceError`` `.invalidInput`, saying what is wrong without repeating the URL.
    public static func webhook(_ text: String) throws(ServiceError) -> URL {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty else {
            throw ServiceError(.invalidInput, "an alert webhook must be a URL such as https://ntfy.sh/TOPIC")
        }
        switch scheme {
        case "https": return url
        case "http" where ChappieHTTPClient.isLoopbackAddress(host: host): return url
        case "http": throw ServiceError(.invalidInput, "an alert webhook over http must be on loopback (127.0.0.1, ::1, localhost); use https")
        default: throw ServiceError(.invalidInput, "an alert webhook must be an https URL (or http on loopback)")
        }
    }

    /// `--alert-at`: comma-separated percents from 1 to 100, such as `80,95,100`.
    public static func thresholds(_ text: String) throws(ServiceError) -> [Double] {
        var values: [Double] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let trimmed = part.trimmingCharacters(in: .whitespaces)
            guard trimmed.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }), let value = Double(trimmed), value >= 1, value <= 100 else {
                throw ServiceError(.invalidInput, "--alert-at takes percents from 1 to 100, separated by commas, such as 80,95,100")
            }
            values.append(value)
        }
        return Array(Set(values)).sorted()
    }

    /// The alert command from its one-string form (``CommandWords``).
    public static func command(_ text: String) throws(ServiceError) -> [String] {
        do {
            return try CommandWords.split(text)
        } catch {
            throw ServiceError(.invalidInput, "the alert command is not a command line: \(error)")
        }
    }

    /// A webhook as output and logs show it: scheme, host and port; its path and query often hold
    /// the secret (a Slack or ntfy topic), so they are left out.
    public static func redacted(_ url: URL) -> String {
        let host = url.host ?? "?"
        var shown = "\(url.scheme ?? "?")://\(host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host)"
        if let port = url.port { shown += ":\(port)" }
        if !url.path.isEmpty && url.path != "/" || url.query != nil { shown += "/…" }
        return shown
    }

}
