import CSQLite

/// A read-only SQLite connection to the store, with one read transaction for every query made.
///
/// It never writes and never sets the database up: a store that needs anything done at open
/// (migrations, a key, a first-open reseal) is the full binary's. Opening read-only keeps the
/// write GRDB makes at each open (creating and dropping a table to make the WAL files) off the
/// hot path.
final class ReadOnlyDatabase {
    private let connection: OpaquePointer

    /// A value of a row's column.
    enum Value: Equatable {
        case null
        case integer(Int64)
        case real(Double)
        case text(String)
        case blob([UInt8])

        var text: String? {
            if case .text(let text) = self { text } else { nil }
        }

        var integer: Int64? {
            if case .integer(let integer) = self { integer } else { nil }
        }

        /// A nullable text column: `.some(nil)` for NULL, `.some(text)`, `nil` for another type.
        var optionalText: String?? {
            switch self {
            case .null: .some(nil)
            case .text(let text): .some(text)
            default: nil
            }
        }

        /// A nullable integer column: `.some(nil)` for NULL, `.some(number)`, `nil` for another type.
        var optionalInteger: Int64?? {
            switch self {
            case .null: .some(nil)
            case .integer(let number): .some(number)
            default: nil
            }
        }

        /// A blob, or text as its UTF-8 bytes (GRDB stores `Data` as a blob, but a text value is the same bytes).
        var bytes: [UInt8]? {
            switch self {
            case .blob(let bytes): bytes
            case .text(let text): Array(text.utf8)
            default: nil
            }
        }
    }

    /// Opens `path` read-only and starts a read transaction. The caller has checked that the file
    /// and its `-wal`, `-shm` and `-journal` are not links (`SQLITE_OPEN_NOFOLLOW` would refuse a
    /// link anywhere in the path, such as a `/home` that links to `/var/home`, which the full binary
    /// follows).
    init?(path: String) {
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        guard sqlite3_open_v2(path, &handle, flags, nil) == SQLITE_OK, let handle else {
            sqlite3_close_v2(handle)
            return nil
        }
        connection = handle
        // A writer holding the WAL index is waited for briefly; then the full binary waits its 10 s.
        sqlite3_busy_timeout(connection, 200)
        guard sqlite3_exec(connection, "BEGIN", nil, nil, nil) == SQLITE_OK else { return nil }
    }

    deinit {
        sqlite3_exec(connection, "COMMIT", nil, nil, nil)
        sqlite3_close_v2(connection)
    }

    /// The rows of `sql` with `arguments` bound in order (text or integer); `nil` when it fails.
    func rows(_ sql: String, _ arguments: [Value] = []) -> [[Value]]? {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(connection, sql, -1, &statement, nil) == SQLITE_OK, let statement else { return nil }
        defer { sqlite3_finalize(statement) }
        for (offset, argument) in arguments.enumerated() {
            let index = Int32(offset + 1)
            let bound: Int32 =
                switch argument {
                case .integer(let value): sqlite3_bind_int64(statement, index, value)
                case .text(let text): sqlite3_bind_text(statement, index, text, -1, unsafeBitCast(-1, to: sqlite3_destructor_type.self))
                default: SQLITE_MISUSE
                }
            guard bound == SQLITE_OK else { return nil }
        }
        var rows: [[Value]] = []
        while true {
            switch sqlite3_step(statement) {
            case SQLITE_ROW:
                rows.append((0..<sqlite3_column_count(statement)).map { column in Self.value(statement, column) })
            case SQLITE_DONE:
                return rows
            default:
                return nil
            }
        }
    }

    private static func value(_ statement: OpaquePointer, _ column: Int32) -> Value {
        switch sqlite3_column_type(statement, column) {
        case SQLITE_INTEGER: return .integer(sqlite3_column_int64(statement, column))
        case SQLITE_FLOAT: return .real(sqlite3_column_double(statement, column))
        case SQLITE_TEXT:
            guard let text = sqlite3_column_text(statement, column) else { return .null }
            let count = Int(sqlite3_column_bytes(statement, column))
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(statement, column))
            guard count > 0, let blob = sqlite3_column_blob(statement, column) else { return .blob([]) }
            return .blob(Array(UnsafeRawBufferPointer(start: blob, count: count)))
        default: return .null
        }
    }
}
