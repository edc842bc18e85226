/// An HTTP request method.
public struct HTTPMethod: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The method token as sent on the wire, for example `GET`.
    public let rawValue: String

    /// Creates a method from its token.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// `GET`.
    public static let get = HTTPMethod(rawValue: "GET")
    /// `POST`.
    public static let post = HTTPMethod(rawValue: "POST")
    /// `PUT`.
    public static let put = HTTPMethod(rawValue: "PUT")
    /// `DELETE`.
    public static let delete = HTTPMethod(rawValue: "DELETE")
    /// `HEAD`: the response has no body.
    public static let head = HTTPMethod(rawValue: "HEAD")

    /// The method token.
    public var description: String { rawValue }
}
