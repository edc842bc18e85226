import ChappieStoreFormat
import CSodium
import ChappieText
import Glibc

/// `chappie accounts list` as a table, from the local store read-only, built as the full binary
/// builds it (`Sources/chappie/Commands/Accounts.swift`, with the same ``TextTable``,
/// ``RelativeTime``, ``PlanName``, ``DecimalText`` and ``HeadroomRule``). `nil` when the full binary
/// must answer: the store is not one to read as it is (``OpenedStore``), an account's credentials
/// do not open (the full binary marks it and warns), a value is one the full binary would read
/// otherwise (a time in another format, a percentage out of range), or `HOME` is unset.
struct AccountsTable {
    let directory: DataDirectory
    /// Seconds since 1970.
    let now: Double
    /// `HOME`, for the Codex home column's `~`.
    let userHome: String

    /// The table and its line break, or the line for no accounts.
    func render() -> String? {
        guard let store = OpenedStore(directory), !store.hasMoves,
            let accounts = store.database.rows("SELECT \(AccountRow.columns) FROM accounts ORDER BY name"),
            let sealed = store.database.rows("SELECT account_id, key_id, nonce, ciphertext, binding FROM sealed_credentials"),
            let readings = store.database.rows(NewestReadings.sql(now: now))
        else { return nil }
        guard !accounts.isEmpty else { return "No accounts yet. Import one from the Codex CLI with: chappie accounts import\n" }
        var credentials: [Int64: [ReadOnlyDatabase.Value]] = [:]
        for row in sealed {
            guard let id = row[0].integer else { return nil }
            credentials[id] = Array(row.dropFirst())
        }
        // The first reading of an account counts, as the full binary keeps the first of equal times.
        var latest: [Int64: Reading] = [:]
        for row in readings {
            guard let reading = Reading(row) else { return nil }
            if latest[reading.accountID] == nil { latest[reading.accountID] = reading }
        }

        var table = TextTable(
            " ", "NAME", TextTable.Column("EMAIL", drop: 5), TextTable.Column("PLAN", drop: 3), "STATUS", "5H", "WEEKLY",
            TextTable.Column("HEADROOM", drop: 4), TextTable.Column("NEXT RESET", drop: 2), TextTable.Column("TOKEN EXPIRES", drop: 1),
            TextTable.Column("CODEX HOME", clips: true))
        tzset()
        for row in accounts {
            guard let account = AccountRow(row), let sealed = credentials[account.id],
                var plaintext = store.credentials(sealed, uuid: account.uuid)
            else { return nil }
            sodium_memzero(&plaintext, plaintext.count)
            let expiry = account.accessExpiresAt.map { RelativeTime.describe(secondsFromNow: $0 - now) } ?? "-"
            let reading = latest[account.id]
            func percent(_ window: Reading.Window?) -> TextTable.Cell {
                window.map { TextTable.Cell("\(DecimalText.format($0.used)) %", full: $0.used >= 100) } ?? "-"
            }
            let headroom = reading.map { reading in
                let (binding, label) = reading.binding
                let percent = HeadroomRule.percent(bindingUsed: binding?.used, reserve: account.reservePercent)
                return TextTable.Cell("\(DecimalText.format(percent)) % (\(label ?? "-"))", full: percent <= 0)
            }
            let nextReset = [reading?.fiveHour?.resetsAt, reading?.weekly?.resetsAt].compactMap { $0 }.min()
            guard let codexHomeCell = codexHomeCell(account.codexHome) else { return nil }
            table.append([
                store.activeID == account.id ? "*" : " ", TextTable.Cell(account.name), TextTable.Cell(account.email ?? "-"),
                TextTable.Cell(account.plan.map { PlanName.display(raw: $0) } ?? "-"),
                TextTable.Cell(account.status), percent(reading?.fiveHour), percent(reading?.weekly), headroom ?? "-",
                TextTable.Cell(nextReset.map(Self.localTime) ?? "-"), TextTable.Cell(expiry), codexHomeCell,
            ])
        }
        return table.render() + "\n"
    }

    /// The Codex home column: `~` for the home directory, `private` on a narrow terminal for one of
    /// `chappie exec`'s own homes; `nil` to hand on.
    private func codexHomeCell(_ path: String?) -> TextTable.Cell? {
        guard let path else { return "-" }
        // A relative path, or one in `codex-homes` whose name Foundation's UUID parser might read
        // otherwise than this strict one: the full binary's to show.
        guard path.hasPrefix("/"), path.split(separator: "/").dropLast().last != "codex-homes" || CodexHomePath.isPrivate(path) else { return nil }
        let shown = CodexHomePath.shown(path, home: userHome)
        return TextTable.Cell(shown, short: CodexHomePath.isPrivate(path) ? "private" : shown)
    }

    /// `2026-11-21 14:05` in local time.
    static func localTime(_ seconds: Int64) -> String {
        var time = time_t(seconds)
        var parts = tm()
        localtime_r(&time, &parts)
        func digits(_ value: Int32, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(digits(parts.tm_year + 1900, 4))-\(digits(parts.tm_mon + 1, 2))-\(digits(parts.tm_mday, 2)) "
            + "\(digits(parts.tm_hour, 2)):\(digits(parts.tm_min, 2))"
    }

    /// A time as the store writes it (UTC `YYYY-MM-DD HH:MM:SS.SSS`, or without the milliseconds), in
    /// seconds since 1970; `nil` for any other form, and before 1970 (Foundation's calendar turns
    /// Julian before 1582): the full binary reads those.
    static func databaseTime(_ text: String) -> Double? {
        let bytes = Array(text.utf8)
        guard bytes.count == 19 || bytes.count == 23 else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for index in range {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) else { return nil }
                value = value * 10 + Int(bytes[index] - UInt8(ascii: "0"))
            }
            return value
        }
        let separators: [(Int, UInt8)] = [
            (4, UInt8(ascii: "-")), (7, UInt8(ascii: "-")), (10, UInt8(ascii: " ")), (13, UInt8(ascii: ":")), (16, UInt8(ascii: ":")),
        ]
        guard separators.allSatisfy({ bytes[$0.0] == $0.1 }), let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19), (1970...9999).contains(year),
            (1...12).contains(month), (1...31).contains(day),
            hour < 24, minute < 60, second < 60
        else { return nil }
        var milliseconds = 0
        if bytes.count == 23 {
            guard bytes[19] == UInt8(ascii: "."), let fraction = number(20..<23) else { return nil }
            milliseconds = fraction
        }
        // Days from 1970-01-01 in the proleptic Gregorian calendar (Howard Hinnant's days_from_civil).
        let shifted = month <= 2 ? year - 1 : year
        let era = (shifted >= 0 ? shifted : shifted - 399) / 400
        let yearOfEra = shifted - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return Double(days * 86400 + hour * 3600 + minute * 60 + second) + Double(milliseconds) / 1000
    }
}

/// An account's newest reading, as the columns of `usage_samples` hold it.
private struct Reading {
    struct Window: Equatable {
        var used: Double
        var minutes: Int64?
        var resetsAt: Int64?
    }

    let accountID: Int64
    let fiveHour: Window?
    let weekly: Window?

    /// From a `usage_samples` row (`s.*`: id, account_id, observed_at, source, limit_id, plan, the
    /// 5-hour and weekly windows' used percent, minutes and reset, credits, limit_reached); `nil`
    /// for a value the full binary would read otherwise.
    init?(_ row: [ReadOnlyDatabase.Value]) {
        guard row.count == 16, let accountID = row[1].integer else { return nil }
        func window(_ at: Int) -> Window?? {
            let used: Double
            switch row[at] {
            case .null: return .some(nil)
            case .real(let value): used = value
            case .integer(let value): used = Double(value)
            default: return nil
            }
            // The full binary clamps a stored percentage; one that needs it is its to show.
            guard used.isFinite, (0...100).contains(used) else { return nil }
            // A reset time chappie could not have stored (outside 1970–9999) is the full binary's to show.
            guard let minutes = row[at + 1].optionalInteger, let resets = row[at + 2].optionalInteger,
                resets.map({ (0...AccessTokenClaims.latestExpiry).contains(Double($0)) }) ?? true
            else { return nil }
            return .some(Window(used: used, minutes: minutes, resetsAt: resets))
        }
        guard let fiveHour = window(6), let weekly = window(9) else { return nil }
        self.accountID = accountID
        self.fiveHour = fiveHour
        self.weekly = weekly
    }

    /// The binding window and its name (`5h` or `weekly`), by ``HeadroomRule``; a weekly window
    /// equal to the 5-hour one is named `5h`, as the full binary names it.
    var binding: (Window?, String?) {
        switch (fiveHour, weekly) {
        case (let short?, let long?):
            let fiveHourBinds = HeadroomRule.fiveHourBinds(
                fiveHourUsed: short.used, fiveHourResetsAt: short.resetsAt.map(Double.init), weeklyUsed: long.used,
                weeklyResetsAt: long.resetsAt.map(Double.init))
            let window = fiveHourBinds ? short : long
            return (window, window == short ? "5h" : "weekly")
        case (let short?, nil): return (short, "5h")
        case (nil, let long?): return (long, "weekly")
        case (nil, nil): return (nil, nil)
        }
    }
}

/// A row of `accounts` as the full binary decodes it (every column it reads of the right type, a
/// time in the store's own form); `nil` for one it would read otherwise or not at all.
struct AccountRow {
    /// The columns, in the order the initializer reads them.
    static let columns = "id, name, email, plan, status, access_expires_at, codex_home, reserve_percent, uuid"

    let id: Int64
    let name: String
    let email: String?
    let plan: String?
    let status: String
    /// Seconds since 1970.
    let accessExpiresAt: Double?
    let codexHome: String?
    let reservePercent: Double?
    let uuid: String

    init?(_ row: [ReadOnlyDatabase.Value]) {
        guard row.count == 9, let id = row[0].integer, let name = row[1].text, FrontRequest.isAccountName(name), let email = row[2].optionalText,
            let plan = row[3].optionalText, let status = row[4].text, ["ok", "reauth_required", "disabled"].contains(status),
            let expires = row[5].optionalText, let codexHome = row[6].optionalText, let uuid = row[8].text,
            UUIDText.isUUID(uuid, lowercaseOnly: true)
        else { return nil }
        var expiresAt: Double?
        if let expires {
            guard let seconds = AccountsTable.databaseTime(expires) else { return nil }
            expiresAt = seconds
        }
        switch row[7] {
        case .null: reservePercent = nil
        case .real(let value): reservePercent = value
        case .integer(let value): reservePercent = Double(value)
        default: return nil
        }
        self.id = id
        self.name = name
        self.email = email
        self.plan = plan
        self.status = status
        self.accessExpiresAt = expiresAt
        self.codexHome = codexHome
        self.uuid = uuid
    }
}
