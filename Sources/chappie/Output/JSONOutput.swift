import ChappieSystem
import Foundation

/// Prints a value as pretty, key-sorted JSON (ISO 8601 dates) on standard output.
enum JSONOutput {
    static func print<T: Encodable>(_ value: T) throws {
        var data = try Formatting.jsonEncoder().encode(value)
        // Foundation writes an empty list pretty-printed as "[\n\n]" (and an empty object so).
        if let text = String(data: data, encoding: .utf8), text.allSatisfy({ "[]{}\n ".contains($0) }), text.count > 2 {
            data = Data(text.filter { !$0.isWhitespace }.utf8)
        }
        StandardStream.output.write(data + Data("\n".utf8))
    }
}
