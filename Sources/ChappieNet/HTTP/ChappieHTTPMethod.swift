/// An HTTP request method.
public struct ChappieHTTPMethod: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The method token as sent on the wire, for example `GET`.
    public let rawValue: String

    /// Creates a method from its token.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// `GET`.
    public static let get = ChappieHTTPMethod(rawValue: "GET")
    /// `POST`.
    public static let post = ChappieHTTPMethod(rawValue: "POST")
    /// `PUT`.
    public static let put = ChappieHTTPMethod(rawValue: "PUT")
    /// `DELETE`.
    public static let delete = ChappieHTTPMethod(rawValue: "DELETE")
    /// `HEAD`: the response has no body.
    public static let head = ChappieHTTPMethod(rawValue: "HEAD")

    /// The method token.
    public var description: String { rawValue }
}
