import ChappieCore
import ChappieStore
import Foundation

/// The daemon's dashboard, on the `--http` listener: `/` is a page of every account with its two
/// windows as bars and as 7-day charts, `/api/accounts` the same numbers as JSON.
///
/// The page is server-rendered HTML with inline SVG (``UsageHTMLReport``): it reads without
/// JavaScript. A small inline script fetches `/api/accounts` every 30 seconds and updates the
/// numbers, bars and statuses in place; when an account has a newer reading than the page shows
/// (or accounts came or went), it fetches `/` and puts its accounts, charts included, in place of
/// the old ones. It is read-only (no form, no action), and holds no token; e-mails appear as text,
/// never in a URL.
struct Dashboard: Sendable {
    let store: any AccountStore
    /// How times are written (the daemon's zone).
    var timeZone: TimeZone = .current

    /// One account's row: what the page and `/api/accounts` show.
    struct Row: Encodable {
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
        var fiveHour: Window?
        var weekly: Window?
        /// `5h` or `weekly`: the fuller window, which decides when the account is full.
        var binding: String?
        /// When the newest reading was taken.
        var readAt: Date?
    }

    /// Every account's row, by name.
    func rows() async throws -> [Row] {
        rows(try await store.accounts(), latest: try await store.latestUsage())
    }

    /// The rows of these accounts, from their newest readings.
    private func rows(_ accounts: [Account], latest: [Int64: UsageSample]) -> [Row] {
        accounts.map { account in
            let snapshot = latest[account.id]?.snapshot
            let binding = snapshot?.bindingWindow
            return Row(
                name: account.name.rawValue, email: account.info.email, plan: account.info.plan?.rawValue, status: account.status.rawValue,
                active: account.isActive, codexHome: account.codexHome,
                fiveHour: snapshot?.shortWindow.map { Row.Window(usedPercent: $0.usedPercent, resetsAt: $0.resetsAt) },
                weekly: snapshot?.longWindow.map { Row.Window(usedPercent: $0.usedPercent, resetsAt: $0.resetsAt) },
                binding: binding == nil ? nil : binding == snapshot?.shortWindow ? "5h" : "weekly", readAt: latest[account.id]?.observedAt)
        }
    }

    /// A time as `/api/accounts` writes it (to the millisecond, so that two readings a second apart
    /// differ), and the page's `data-read-at` too, so that the two compare equal.
    private static func iso8601(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    /// `/api/accounts`.
    func json() async throws -> String {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(Self.iso8601(date))
        }
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(try await rows()), as: UTF8.self) + "\n"
    }

    /// `/`: the page.
    func page(now: Date = Date()) async throws -> String {
        let accounts = try await store.accounts()
        let rows = rows(accounts, latest: try await store.latestUsage())
        let since = now.addingTimeInterval(-7 * 86400)
        let series = try await UsageHTMLReport.gather(from: store, accounts: accounts, since: since, until: now)
        let formatter = UsageHTMLReport.minuteFormatter(timeZone)
        let escape = UsageHTMLReport.escape
        var body = "<h1>chappie</h1>\n<p class=\"period\">\(accounts.count) account\(accounts.count == 1 ? "" : "s"); charts over the last 7 days (\(escape(timeZone.identifier))); read <span id=\"read\">\(escape(formatter.string(from: now)))</span></p>\n<main id=\"accounts\">\n"
        for (account, row) in zip(accounts, rows) {
            func bar(_ label: String, _ key: String, _ window: Row.Window?) -> String {
                let used = window.map { UsageHTMLReport.format($0.usedPercent) } ?? "-"
                let width = window.map { UsageHTMLReport.format(min(100, max(0, $0.usedPercent))) } ?? "0"
                let reset = window?.resetsAt.map { ", resets " + escape(formatter.string(from: $0)) } ?? ""
                return """
                    <div class="window\(row.binding == key ? " binding" : "")">\(label) <span class="used" data-field="\(key)">\(used)</span> %\(reset)\
                    <div class="bar"><span data-bar="\(key)" style="width: \(width)%"></span></div></div>

                    """
            }
            body += """
                <section class="account" data-account="\(escape(row.name))" data-read-at="\(row.readAt.map { Self.iso8601($0) } ?? "")">
                <h2>\(escape(row.name))\(row.active ? " <span class=\"active\">active</span>" : "")</h2>
                <p class="who">\(escape(row.email ?? "no e-mail")), \(escape(row.plan ?? "no plan")), <span data-field="status">\(escape(row.status))</span>\
                \(row.codexHome.map { ", Codex home " + escape($0) } ?? "")\(row.binding.map { ", binding window: \($0)" } ?? "")</p>

                """
            body += "<div class=\"windows\">\n" + bar("5-hour", "5h", row.fiveHour) + bar("weekly", "weekly", row.weekly) + "</div>\n<div class=\"charts\">\n"
            for kind in [ChappieUsageWindow.Kind.fiveHour, .weekly] {
                body += "<figure><figcaption>\(kind == .fiveHour ? "5-hour" : "weekly") window, last 7 days</figcaption>\n"
                body += UsageHTMLReport.chart(
                    series[account.id]?[kind] ?? UsageHTMLReport.Series(), account: account.name, kind: kind, start: since, end: now, formatter: formatter)
                body += "\n</figure>\n"
            }
            body += "</div>\n</section>\n"
        }
        body += "</main>\n"
        return UsageHTMLReport.document(title: "chappie", style: """
            .active { font-size: 12px; background: #2a6fdb; color: #fff; border-radius: 3px; padding: 0 4px; }
            .windows { margin-bottom: 0.5em; }
            .window { display: inline-block; vertical-align: top; width: 300px; margin-right: 2em; font-size: 13px; }
            .window.binding { font-weight: 600; }
            .bar { height: 8px; background: #eee; border-radius: 4px; margin-top: 2px; }
            .bar span { display: block; height: 8px; background: #2a6fdb; border-radius: 4px; }
            figure { display: inline-block; vertical-align: top; margin: 0 1.5em 0 0; }
            figcaption { font-size: 12px; color: #555; }
            """, body: body + Self.refreshScript)
    }

    /// Every 30 s: the numbers, bars and statuses from `/api/accounts` in place, and the accounts
    /// with their charts from `/` when a reading is newer than the page's (the page reads without it).
    private static let refreshScript = """
            <script>//<![CDATA[
            // Every 30 s: numbers, bars and statuses from /api/accounts; the charts again from / when a
            // reading is newer than the page's, or accounts came or went. The page itself reads without this.
            function sections() { return Array.prototype.slice.call(document.querySelectorAll("section[data-account]")); }
            function redraw() {
              return fetch("/").then(function (r) { return r.text(); }).then(function (text) {
                var fresh = new DOMParser().parseFromString(text, "text/html");
                var accounts = fresh.getElementById("accounts"), read = fresh.getElementById("read");
                if (accounts) { document.getElementById("accounts").replaceWith(accounts); }
                if (read) { document.getElementById("read").replaceWith(read); }
              });
            }
            setInterval(function () {
              fetch("/api/accounts").then(function (r) { return r.json(); }).then(function (rows) {
                var shown = sections();
                var stale = shown.length !== rows.length;
                rows.forEach(function (row, index) {
                  var section = shown[index];
                  if (!section || section.getAttribute("data-account") !== row.name) { stale = true; return; }
                  if ((section.getAttribute("data-read-at") || "") !== (row.readAt || "")) { stale = true; }
                  [["5h", row.fiveHour], ["weekly", row.weekly]].forEach(function (pair) {
                    var used = section.querySelector('[data-field="' + pair[0] + '"]');
                    var bar = section.querySelector('[data-bar="' + pair[0] + '"]');
                    if (used && pair[1]) { used.textContent = Math.round(pair[1].usedPercent * 10) / 10; }
                    if (bar && pair[1]) { bar.style.width = Math.min(100, Math.max(0, pair[1].usedPercent)) + "%"; }
                  });
                  var status = section.querySelector('[data-field="status"]');
                  if (status) { status.textContent = row.status; }
                });
                if (stale) { return redraw(); }
              }).catch(function () {});
            }, 30000);
            //]]></script>

            """
}
