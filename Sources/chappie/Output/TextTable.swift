import ChappieCore

/// A plain-text table with left-aligned columns, for terminal output.
struct TextTable {
    private let header: [String]
    private var rows: [[String]] = []

    init(_ header: String...) {
        self.header = header
    }

    init(_ header: [String]) {
        self.header = header
    }

    /// Adds a row; cells are made safe for the terminal (no control characters).
    mutating func append(_ row: String...) {
        append(row)
    }

    /// Adds a row; cells are made safe for the terminal (no control characters).
    mutating func append(_ row: [String]) {
        rows.append(row.map { TerminalText.sanitized($0) })
    }

    /// The table, one line per row, columns separated by two spaces.
    func render() -> String {
        let all = [header] + rows
        let widths = header.indices.map { column in all.map { $0.indices.contains(column) ? $0[column].count : 0 }.max() ?? 0 }
        return all.map { row in
            row.enumerated().map { index, cell in
                index == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[index] - cell.count)
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }
}
