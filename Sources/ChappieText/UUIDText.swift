/// The shape of a UUID as chappie writes it: 8-4-4-4-12 hex digits.
package enum UUIDText {
    /// Whether `text` is a UUID in that shape, in lower case only or in either case.
    package static func isUUID(_ text: some StringProtocol, lowercaseOnly: Bool) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.count == 36
            && bytes.enumerated().allSatisfy { offset, byte in
                if [8, 13, 18, 23].contains(offset) { return byte == UInt8(ascii: "-") }
                let letter = lowercaseOnly ? byte : byte | 0x20
                return (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(letter)
            }
    }
}
