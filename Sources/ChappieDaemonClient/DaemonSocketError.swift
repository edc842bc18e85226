public import ChappieCore
public import ChappieSystem
import Glibc

/// A daemon's socket that chappie will not talk to: another user listens there, or the data
/// directory holding it can be changed by another user. Never a reason to read the store instead:
/// whoever could plant the socket could plant the rest (docs/security.md, "The daemon's socket").
public struct DaemonSocketError: ChappieFailure {
    public let message: String
    public var underlying: (any Error & Sendable)? { nil }
    /// A set-up to fix (exit 78).
    public var recovery: ChappieErrorRecovery { .permanent(.fixConfiguration) }

    /// Another user's process (`uid`) accepted the connection at `socket`.
    public static func foreignListener(socket: String, uid: UInt32) -> DaemonSocketError {
        DaemonSocketError(
            message: "another user (uid \(uid)) listens at \(socket), not you (uid \(geteuid())); chappie sent it nothing and trusts none of it. "
                + "Find who runs it (ss -xlp | grep \(socket)), remove the socket, and keep your data directory yours (chmod 700)")
    }

    /// The data directory `directory`, where the socket is, can be changed by another user.
    public static func untrustedDirectory(_ directory: String, _ problem: PathOwnership.Problem) -> DaemonSocketError {
        DaemonSocketError(
            message: "the data directory \(directory) \(problem), who could put a socket, a database or a link of their own there; "
                + "chappie uses nothing in it. Check what is in it, then \(problem.fix(at: directory)), or use a directory of your own (--home)")
    }
}
