/// How values that hold tokens print: never the token. Types that carry tokens conform to
/// ``RedactedDescription`` so that `print`, string interpolation, `dump`, debuggers and test
/// failure messages show the field names and `<redacted>` instead of the secrets.
public protocol RedactedDescription: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The fields to show, with their values already redacted where they are secret.
    var redactedFields: KeyValuePairs<String, String> { get }
}

extension RedactedDescription {
    /// `TypeName(field: value, …)` with secrets redacted.
    public var description: String {
        "\(Self.self)(" + redactedFields.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + ")"
    }

    /// The same as ``description``.
    public var debugDescription: String { description }

    /// A mirror of the redacted fields only.
    public var customMirror: Mirror {
        Mirror(self, children: redactedFields.map { (label: Optional($0.key), value: $0.value as Any) }, displayStyle: .struct)
    }
}

/// What a secret prints as.
public let redactedMarker = "<redacted>"
