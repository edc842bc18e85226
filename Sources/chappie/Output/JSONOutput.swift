import ChappieSystem
import Foundation

/// Prints a value as pretty, key-sorted JSON (ISO 8601 dates) on standard output.
enum JSONOutput {
    static func print<T: Encodable>(_ value: T) throws {
        let data = try Formatting.jsonEncoder().encode(value)
        StandardStream.output.write(data + Data("\n".utf8))
    }
}
