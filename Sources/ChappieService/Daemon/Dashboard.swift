import ChappieText
import ChappieCore
import ChappieStore
import ChappieVault
import Foundation

/// The daemon's dashboard, on the `--http` listener: `/` is a page of every account with its two
/// windows as bars and as 7-day charts, `/api/accounts` the same numbers as JSON.
///
/// The page is server-rendered HTML with inline SVG (``UsageHTMLReport``): it reads without
/// JavaScript. A small inline script fetches `/api/accounts` every 30 seconds; when an account's
/// `revision` differs from the page's (anything shown changed: a reading, the status, the active
/// account, a reset time passing; or the hour, as the charts' 7 days move on) or accounts came or went, it fetches `/` and puts its accounts,
/// charts included, in place of the old ones. It is read-only (no form, no action), and holds no
/// token; e-mails appear as text, never in a URL.
struct Dashboard: Sendable {
    /// What the page says of the daemon's polling: it warns when neither a poll (answered or not)
    /// nor any reading of a signed-in account is newer than twice the interval: the daemon is stuck.
    struct Polling: Sendable {
        /// `--poll-interval`.
        var interval: Duration
        /// When the daemon started, and when it last polled, answered or not (`nil`: not yet).
        var startedAt: Date
        var lastPoll: @Sendable () async -> Date?
    }

    let store: any AccountStore
    /// How times are written (the daemon's zone, or `--tz`).
    let timeZone: TimeZone
    /// The daemon's polling; `nil` shows no line about it.
    var polling: Polling? = nil

    /// Used percent from which a window is shown as near its limit.
    static let highPercent = 80.0

    /// One account's row: what the page and `/api/accounts` show.
    struct Row: Encodable {
        /// A window's use and end, from the newest reading.
        struct Window: Encodable {
            var usedPercent: Double
            var resetsAt: Date?
        }

        var name: String
        var email: String?
        var plan: String?
        var status: String
        var active: Bool
        var codexHome: String?
        /// Why the account's last poll or refresh failed, until one works again.
        var lastError: String?
        var fiveHour: Window?
        var weekly: Window?
        /// `5h` or `weekly`: the fuller window, which decides when the account is full.
        var binding: String?
        /// Whether the service said the limit is reached (the binding window is then full).
        var limitReached = false
        /// When the newest reading was taken.
        var readAt: Date?
        /// A digest of everything the page shows of the account at the time of asking, and of the
        /// hour (the charts' 7 days move on): the page holds it too (`data-revision`), so its script
        /// knows when to take the page up again.
        var revision = ""
    }

    /// Every account's row, by name, as of `now`.
    func rows(now: Date = Date()) async throws -> [Row] {
        rows(try await store.accounts(), latest: try await store.latestUsage(), now: now)
    }

    /// The rows of these accounts, from their newest readings.
    private func rows(_ accounts: [Account], latest: [Int64: UsageSample], now: Date) -> [Row] {
        accounts.map { account in
            let snapshot = latest[account.id]?.snapshot
            let binding = snapshot?.bindingWindow
            var row = Row(
                name: account.name.rawValue, email: account.info.email, plan: account.info.plan?.rawValue, status: account.status.rawValue,
                active: account.isActive, codexHome: account.codexHome, lastError: account.lastError,
                fiveHour: snapshot?.shortWindow.map { Row.Window(usedPercent: $0.usedPercent, resetsAt: $0.resetsAt) },
                weekly: snapshot?.longWindow.map { Row.Window(usedPercent: $0.usedPercent, resetsAt: $0.resetsAt) },
                binding: binding == nil ? nil : binding == snapshot?.shortWindow ? "5h" : "weekly", limitReached: snapshot?.limitReached ?? false,
                readAt: latest[account.id]?.observedAt)
            // The hour too: the charts' 7 days move on, so an unchanged account is drawn again hourly.
            let shown: [String?] =
                [
                    "\(Int(now.timeIntervalSince1970 / 3600))", row.name, row.email, row.plan, row.status, "\(row.active)", row.codexHome,
                    row.lastError,
                    row.binding, row.readAt.map(Self.iso8601),
                ]
                + [row.fiveHour, row.weekly].flatMap { window -> [String?] in
                    [window.map { "\($0.usedPercent)" }, window?.resetsAt.map(Self.iso8601), window?.resetsAt.map { "\($0 <= now)" }]
                }
            row.revision = Self.digest(shown.map { $0 ?? "-" }.joined(separator: "\u{1F}"))
            return row
        }
    }

    /// FNV-1a, 64 bits, in hexadecimal: enough to tell one state of a row from the next.
    private static func digest(_ text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return String(hash, radix: 16)
    }

    /// A time as `/api/accounts` writes it, to the millisecond (two readings a second apart differ).
    private static func iso8601(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    /// `/api/accounts`.
    func json(now: Date = Date()) async throws -> String {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(Self.iso8601(date))
        }
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(try await rows(now: now)), as: UTF8.self) + "\n"
    }

    /// `/`: the page.
    func page(now: Date = Date()) async throws -> String {
        let accounts = try await store.accounts()
        let rows = rows(accounts, latest: try await store.latestUsage(), now: now)
        let since = now.addingTimeInterval(-7 * 86400)
        let series = try await UsageHTMLReport.gather(from: store, accounts: accounts, since: since, until: now)
        let formatter = MinuteFormat.formatter(timeZone)
        let escape = HTMLText.escaped
        let axis = UsageHTMLReport.TimeAxis(start: since, end: now, formatter: formatter)
        // Tokens per UTC day, the last 14 days.
        let utc = TokenBars.utcDay
        let days = TokenBars.days(from: now.addingTimeInterval(-13 * 86400).formatted(utc), to: now.formatted(utc))
        var tokens: [Int64: [String: Int]] = [:]
        for entry in try await store.dailyTokens(since: days.first, accounts: nil) where entry.day <= (days.last ?? "") {
            tokens[entry.accountID, default: [:]][entry.day] = entry.tokens
        }
        var body = """
            <h1>chappie</h1>
            <p class="period" id="period">\(accounts.count) account\(accounts.count == 1 ? "" : "s"); charts over the last 7 days \
            (\(escape(timeZone.identifier))); read \(escape(formatter.string(from: now)))</p>
            \(await daemonLine(now: now, rows: rows, formatter: formatter))
            <main id="accounts">

            """
        for (account, row) in zip(accounts, rows) {
            func bar(_ label: String, _ key: String, _ window: Row.Window?) -> String {
                let used = window.map { UsageHTMLReport.format($0.usedPercent) } ?? "-"
                // Colour and words: a window near its limit must not look like one at 20 %.
                let full = row.limitReached && row.binding == key
                let level = window.map { full || $0.usedPercent >= 100 ? " full" : $0.usedPercent >= Self.highPercent ? " high" : "" } ?? ""
                let mark =
                    level == " full"
                    ? " <strong class=\"mark\">full</strong>" : level == " high" ? " <strong class=\"mark\">near its limit</strong>" : ""
                let width = window.map { UsageHTMLReport.format(min(100, max(0, $0.usedPercent))) } ?? "0"
                // An end already past: the newest reading is older than it, and the window has reset since.
                let reset =
                    window?.resetsAt.map {
                        $0 <= now
                            ? ", reset at \(escape(formatter.string(from: $0))); no reading since" : ", resets " + escape(formatter.string(from: $0))
                    } ?? ""
                return """
                    <div class="window\(row.binding == key ? " binding" : "")\(level)">\(label) <span class="used" data-field="\(key)">\(used)</span> %\(mark)\(reset)\
                    <div class="bar"><span data-bar="\(key)" style="width: \(width)%"></span></div></div>

                    """
            }
            body += """
                <section class="account" data-account="\(escape(row.name))" data-revision="\(row.revision)">
                <h2>\(escape(row.name))\(row.active ? " <span class=\"active\">active</span>" : "")</h2>
                <p class="who">\(escape(row.email ?? "no e-mail")), \(escape(row.plan ?? "no plan")), <span data-field="status">\(escape(row.status))</span>\
                \(row.codexHome.map { ", Codex home " + escape($0) } ?? "")\(row.binding.map { ", binding window: \($0)" } ?? "")</p>
                <p class="read">\(row.readAt.map { "Latest reading " + Self.age($0, now: now, formatter: formatter) } ?? "No reading yet")</p>
                \(row.lastError.map { "<p class=\"problem\">Last poll or refresh failed: \(escape($0))</p>\n" } ?? "")
                """
            body +=
                "<div class=\"windows\">\n" + bar("5-hour", "5h", row.fiveHour) + bar("weekly", "weekly", row.weekly)
                + "</div>\n<div class=\"charts\">\n"
            for kind in [ChappieUsageWindow.Kind.fiveHour, .weekly] {
                body += "<figure><figcaption>\(kind.label) window, last 7 days</figcaption>\n"
                body += UsageHTMLReport.chart(
                    series[account.id]?[kind] ?? UsageHTMLReport.Series(), account: account.name, kind: kind, axis: axis)
                body += "\n</figure>\n"
            }
            let counts = tokens[account.id] ?? [:]
            let total = days.reduce(0) { DailyTokens.adding($0, counts[$1] ?? 0) }
            body += "<figure class=\"tokens\"><figcaption>Tokens per day (UTC), last 14 days: \(escape(TokenBars.short(total)))</figcaption>\n"
            body += TokenBars.svg(counts, days: days, label: "\(account.name.rawValue): tokens per day, last 14 days") + "\n</figure>\n"
            body += "</div>\n</section>\n"
        }
        body += "</main>\n"
        return UsageHTMLReport.document(
            title: "chappie",
            style: """
                .active { font-size: 12px; background: #2a6fdb; color: #fff; border-radius: 3px; padding: 0 4px; }
                .windows { margin-bottom: 0.5em; }
                .window { display: inline-block; vertical-align: top; width: 300px; margin-right: 2em; font-size: 13px; }
                .window.binding { font-weight: 600; }
                .bar { height: 8px; background: #eee; border-radius: 4px; margin-top: 2px; }
                .bar span { display: block; height: 8px; background: #2a6fdb; border-radius: 4px; }
                .window.high .bar span { background: #d97706; }
                .window.full .bar span { background: #c62828; }
                .window.high .mark { color: #b45309; }
                .window.full .mark { color: #c62828; }
                .read { font-size: 12px; color: #555; margin: 0 0 0.3em; }
                .problem { font-size: 13px; color: #c62828; margin: 0 0 0.5em; }
                .daemon { font-size: 13px; color: #555; }
                .daemon.stale { color: #c62828; font-weight: 600; }
                figure { display: inline-block; vertical-align: top; margin: 0 1.5em 0 0; }
                figcaption { font-size: 12px; color: #555; }
                """, body: body + "<script>" + Self.script + "</script>\n")
    }

    /// `<span class="age" data-at="…">3 min ago</span> (2026-11-26 14:05)`: the script keeps the age
    /// current between reloads.
    static func age(_ date: Date, now: Date, formatter: DateFormatter) -> String {
        "<span class=\"age\" data-at=\"\(iso8601(date))\">\(RelativeTime.describe(date, now: now))</span> (\(HTMLText.escaped(formatter.string(from: date))))"
    }

    /// The line about the daemon's polls: when it last polled, and a warning once neither that nor
    /// the newest reading of a signed-in account is within twice the poll interval (readings other
    /// processes store make polls unneeded, and count).
    func daemonLine(now: Date, rows: [Row], formatter: DateFormatter) async -> String {
        guard let polling else { return "" }
        let interval = Double(polling.interval.components.seconds)
        let last = await polling.lastPoll()
        let pollable = rows.filter { $0.status == AccountStatus.ok.rawValue }
        let newestReading = pollable.compactMap(\.readAt).max()
        let since = [last ?? polling.startedAt, newestReading].compactMap { $0 }.max() ?? polling.startedAt
        let stale = !pollable.isEmpty && now.timeIntervalSince(since) > 2 * interval
        let attributes =
            "id=\"daemon\" data-last-poll=\"\(Self.iso8601(since))\" data-poll-interval=\"\(Int(interval))\" data-pollable=\"\(pollable.count)\""
        let when =
            last.map { "Last poll " + Self.age($0, now: now, formatter: formatter) } ?? "No poll yet since the daemon started "
            + Self.age(polling.startedAt, now: now, formatter: formatter)
        let warning =
            stale
            ? " <strong>The daemon has not polled, and no reading came, for over twice its poll interval (\(DurationText.format(polling.interval))): readings may be old. Check chappie status and the daemon's log.</strong>"
            : ""
        return "<p class=\"daemon\(stale ? " stale" : "")\" \(attributes)>\(when).\(warning)</p>"
    }

    /// Every 30 s, `/api/accounts`; when any account's revision differs from the page's, or accounts
    /// came or went, the period line and the accounts from `/`, in place (the page reads without it).
    static let script = """
        //<![CDATA[
        function ago(s) {
          s = Math.max(0, Math.round(s));  // the words of RelativeTime.describe
          if (s < 2) { return "just now"; }
          if (s < 60) { return s + " s ago"; }
          if (s < 3600) { return Math.floor(s / 60) + " min ago"; }
          if (s < 86400) { return Math.floor(s / 3600) + " h " + Math.floor(s % 3600 / 60) + " min ago"; }
          return Math.floor(s / 86400) + " d " + Math.floor(s % 86400 / 3600) + " h ago";
        }
        function ages() {
          var now = Date.now();
          document.querySelectorAll("span.age[data-at]").forEach(function (span) {
            span.textContent = ago((now - Date.parse(span.getAttribute("data-at"))) / 1000);
          });
          var line = document.getElementById("daemon");
          if (line && !line.classList.contains("stale") && line.getAttribute("data-pollable") !== "0"
              && now - Date.parse(line.getAttribute("data-last-poll")) > 2000 * Number(line.getAttribute("data-poll-interval"))) {
            line.classList.add("stale");
            line.insertAdjacentHTML("beforeend", " <strong>The daemon has not polled, and no reading came, for over twice its poll interval: readings may be old. Check chappie status and the daemon's log.</strong>");
          }
        }
        setInterval(function () {
          ages();
          fetch("/api/accounts").then(function (r) { return r.json(); }).then(function (rows) {
            var quiet = document.getElementById("unreachable");
            if (quiet) { quiet.remove(); }
            var shown = document.querySelectorAll("section[data-account]");
            var stale = shown.length !== rows.length || rows.some(function (row, index) {
              return shown[index].getAttribute("data-account") !== row.name || shown[index].getAttribute("data-revision") !== row.revision;
            });
            if (!stale) { return; }
            return fetch("/").then(function (r) { return r.text(); }).then(function (text) {
              var fresh = new DOMParser().parseFromString(text, "text/html");
              ["period", "daemon", "accounts"].forEach(function (id) {
                var now = fresh.getElementById(id), old = document.getElementById(id);
                if (now && old) { old.replaceWith(now); }
              });
              ages();
            });
          }).catch(function () {
            if (document.getElementById("unreachable")) { return; }
            var note = document.createElement("p");
            note.id = "unreachable";
            note.className = "daemon stale";
            note.textContent = "The daemon does not answer since " + new Date().toLocaleTimeString() + ": this page shows what it last said.";
            document.getElementById("period").after(note);
          });
        }, 30000);
        //]]>
        """

    /// The page's Content-Security-Policy: nothing from elsewhere, only this script (by its hash),
    /// requests only to the daemon, no form, not framed.
    static let contentSecurityPolicy: String = {
        let hash = Data(Sodium.sha256(Array(script.utf8))).base64EncodedString()
        return "default-src 'none'; script-src 'sha256-\(hash)'; style-src 'unsafe-inline'; connect-src 'self'; "
            + "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    }()
}
