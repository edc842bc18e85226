public import Foundation

/// What the data directory looks like on disk, and whether it is private enough.
public struct DirectoryPermissions: Sendable, Equatable {
    /// Whether the directory exists.
    public var exists: Bool
    /// Its permission bits (for example `0o700`), when it exists.
    public var mode: Int?
    /// Whether it belongs to the user running chappie, when it exists.
    public var ownedByCurrentUser: Bool?
    /// What is wrong, with how to fix it; `nil` when nothing is.
    public var problem: String?

    /// Inspects `directory` without changing it.
    public static func inspect(_ directory: URL) -> DirectoryPermissions {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDirectory) else {
            return DirectoryPermissions(exists: false, mode: nil, ownedByCurrentUser: nil, problem: nil)
        }
        guard isDirectory.boolValue else {
            return DirectoryPermissions(
                exists: true, mode: nil, ownedByCurrentUser: nil,
                problem: "\(directory.path) is a file, not a directory: move it away or choose another --home")
        }
        let attributes = (try? FileManager.default.attributesOfItem(atPath: directory.path)) ?? [:]
        let mode = (attributes[.posixPermissions] as? NSNumber)?.intValue
        let owner = (attributes[.ownerAccountID] as? NSNumber)?.uint32Value
        let ownedByMe = owner.map { $0 == getuid() }
        var problem: String?
        if ownedByMe == false {
            problem = "\(directory.path) belongs to another user: use a directory of your own (--home)"
        } else if let mode, mode & 0o077 != 0 {
            problem = "\(directory.path) is readable by others (mode \(String(mode, radix: 8))): run chmod 700 \(directory.path)"
        }
        return DirectoryPermissions(exists: true, mode: mode, ownedByCurrentUser: ownedByMe, problem: problem)
    }
}
