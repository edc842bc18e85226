import ChappieBuild
import Foundation

/// The version of chappie.
///
/// Shown by `chappie --version` and `chappie doctor`, and sent in the `User-Agent` of every request.
public enum ChappieVersion {
    /// The version of this build, in semantic-versioning form.
    public static let current = ChappieBuild.version

    /// `chappie/<version> (<os>; <arch>)`: how chappie names itself in a `User-Agent`, never as
    /// the Codex CLI.
    public static let userAgent: String = {
        var system = utsname()
        uname(&system)
        func text<T>(_ field: T) -> String {
            withUnsafeBytes(of: field) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        }
        return "chappie/\(current) (\(text(system.sysname).lowercased()); \(text(system.machine)))"
    }()
}
