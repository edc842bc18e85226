package import Foundation

/// base64url without padding (RFC 4648 §5), as JWTs and JSON Web Keys use it.
package enum Base64URL {
    /// The bytes, or `nil` when the text holds anything but the URL-safe alphabet (padding,
    /// whitespace and the standard alphabet's `+` and `/` included) or is not base64.
    package static func decode(_ text: Substring) -> Data? {
        guard text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}
