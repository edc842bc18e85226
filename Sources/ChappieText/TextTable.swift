import Glibc

/// A plain-text table with left-aligned columns, for terminal output, fitted to the terminal's
/// width: cells with a short form take it, then columns are dropped in the order given, then
/// clippable columns are cut at a word, until the table fits.
package struct TextTable {
    /// A column and how it gives way on a narrow terminal.
    package struct Column: ExpressibleByStringLiteral {
        package var header: String
        /// Dropped when the table does not fit, lowest first; `nil`: kept.
        package var drop: Int?
        /// May be cut (at a word, marked `…`) down to its header's width or 12 characters.
        package var clips = false

        package init(_ header: String, drop: Int? = nil, clips: Bool = false) {
            self.header = header
            self.drop = drop
            self.clips = clips
        }

        package init(stringLiteral header: String) {
            self.init(header)
        }
    }

    /// A cell: its text, a shorter one for a narrow terminal, and whether it shows an account at
    /// its limit (red on a colour terminal, else followed by `(full)`).
    package struct Cell: ExpressibleByStringLiteral {
        package var text: String
        package var short: String?
        package var full = false

        package init(_ text: String, short: String? = nil, full: Bool = false) {
            self.text = TerminalText.sanitized(text)
            self.short = short.map { TerminalText.sanitized($0) }
            self.full = full
        }

        package init(stringLiteral text: String) {
            self.init(text)
        }
    }

    private let columns: [Column]
    private var rows: [[Cell]] = []

    package init(_ columns: Column...) {
        self.columns = columns
    }

    package init(columns: [Column]) {
        self.columns = columns
    }

    package init(_ headers: [String]) {
        columns = headers.map { Column($0) }
    }

    /// Adds a row of plain cells (made safe for the terminal: no control characters).
    package mutating func append(_ row: String...) {
        append(row.map { Cell($0) })
    }

    /// Adds a row of plain cells.
    package mutating func append(_ row: [String]) {
        append(row.map { Cell($0) })
    }

    /// Adds a row.
    package mutating func append(_ row: [Cell]) {
        rows.append(row)
    }

    /// The table, one line per row, columns separated by two spaces, fitted to `width` when given.
    package func render(width: Int? = Terminal.width, style: Terminal.Style = .current) -> String {
        var visible = Array(columns.indices)
        var useShort = false
        var clipTo: [Int: Int] = [:]
        func text(_ cell: Cell) -> String {
            let base = useShort ? (cell.short ?? cell.text) : cell.text
            return cell.full && style == .plain ? base + " (full)" : base
        }
        func widths() -> [Int: Int] {
            var result: [Int: Int] = [:]
            for column in visible {
                let natural = ([columns[column].header] + rows.map { $0.indices.contains(column) ? text($0[column]) : "" }).map(\.count).max() ?? 0
                result[column] = min(natural, clipTo[column] ?? natural)
            }
            return result
        }
        func total() -> Int { widths().values.reduce(0, +) + 2 * max(0, visible.count - 1) }
        if let width {
            if total() > width, rows.contains(where: { $0.contains { $0.short != nil } }) { useShort = true }
            let droppable = visible.filter { columns[$0].drop != nil }.sorted { (columns[$0].drop ?? .max) < (columns[$1].drop ?? .max) }
            for column in droppable where total() > width {
                visible.removeAll { $0 == column }
            }
            for column in visible where columns[column].clips && total() > width {
                let current = widths()[column] ?? 0
                clipTo[column] = max(max(columns[column].header.count, 12), current - (total() - width))
            }
        }
        let fitted = widths()
        let header = visible.map { Cell(columns[$0].header) }
        return ([header] + rows.map { row in visible.map { row.indices.contains($0) ? row[$0] : Cell("") } }).map { cells in
            zip(visible, cells).enumerated().map { position, pair in
                let (column, cell) = pair
                var shown = text(cell)
                if let limit = clipTo[column] { shown = TerminalText.clipped(shown, to: limit) }
                let padded =
                    position == visible.count - 1 ? shown : shown + String(repeating: " ", count: max(0, (fitted[column] ?? 0) - shown.count))
                return cell.full && style == .colour ? "\u{1B}[31m" + padded + "\u{1B}[0m" : padded
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }
}

/// What the terminal standard output goes to can show.
package enum Terminal {
    /// Whether marks are shown in colour or in words.
    package enum Style {
        case colour, plain

        /// Colour on a terminal, unless `NO_COLOR` is set or the terminal is dumb.
        package static var current: Style {
            if let noColor = Terminal.variable("NO_COLOR"), !noColor.isEmpty { return .plain }
            return isatty(STDOUT_FILENO) == 1 && Terminal.variable("TERM") != "dumb" ? .colour : .plain
        }
    }

    /// `$COLUMNS`, else the width of the terminal standard output is, else `nil` (a pipe gets
    /// whole lines).
    package static var width: Int? {
        if let columns = variable("COLUMNS").flatMap(Int.init), columns > 0 { return columns }
        var size = winsize()
        guard isatty(STDOUT_FILENO) == 1, ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return nil }
        return Int(size.ws_col)
    }

    /// An environment variable (this module does without Foundation, for the front binary).
    static func variable(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }
}
