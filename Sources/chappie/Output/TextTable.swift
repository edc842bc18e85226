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

    mutating func append(_ row: String...) {
        rows.append(row)
    }

    mutating func append(_ row: [String]) {
        rows.append(row)
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
