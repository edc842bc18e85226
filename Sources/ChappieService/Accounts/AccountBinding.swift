public import ChappieCore
import ChappieSystem
public import Foundation

/// An account per directory: a `.chappie-account` file naming the account that commands run in
/// that directory, or below it, use when none is named (`chappie bind NAME`; docs/cli.md,
/// "Which account").
///
/// The nearest file from the working directory up is the one that counts; the search stops at `/`
/// and at a filesystem boundary (a mount), as git's does. A file another user could change (not a
/// regular file, owned by someone else, writable by group or others, or in a directory they can
/// write) is passed over with a warning: it would let them choose the account your commands spend.
///
/// ```swift
/// if let directory = AccountBinding.workingDirectory, let binding = try AccountBinding.nearest(from: directory).binding?.get() {
///     print(binding.name, binding.file.path)
/// }
/// ```
public struct AccountBinding: Sendable, Hashable {
    /// The file's name.
    public static let fileName = ".chappie-account"
    /// The longest file read; a name is far shorter.
    static let maximumSize = 256

    /// The account the directory is bound to.
    public let name: AccountName
    /// The file that says so.
    public let file: URL

    /// What a search found: the nearest usable binding (or why the nearest file cannot be read),
    /// and the files passed over because another user could change them.
    public struct Search: Sendable {
        /// The nearest binding, or the failure of the nearest file that was not passed over (its
        /// name is not an account name, it cannot be read).
        public var binding: Result<AccountBinding, AccountBindingError>?
        /// One sentence per file passed over, naming it.
        public var warnings: [String] = []
    }

    /// This process's working directory; `nil` when it cannot be had (removed, or a path too long
    /// for `getcwd`): then no directory binds anything.
    public static var workingDirectory: URL? {
        let path = FileManager.default.currentDirectoryPath
        return path.hasPrefix("/") ? URL(fileURLWithPath: path, isDirectory: true) : nil
    }

    /// The nearest binding from `directory` up (see the type's description).
    public static func nearest(from directory: URL) -> Search {
        var search = Search()
        var path = directory.standardizedFileURL.path
        guard path.hasPrefix("/") else { return search }
        var info = stat()
        guard stat(path, &info) == 0 else { return search }
        let device = info.st_dev
        while true {
            let file = URL(fileURLWithPath: path).appendingPathComponent(fileName)
            switch read(file) {
            case .none: break
            case .some(.success(let binding)):
                search.binding = .success(binding)
                return search
            case .some(.failure(.untrusted(let reason))):
                search.warnings.append(reason)
            case .some(.failure(let error)):
                search.binding = .failure(error)
                return search
            }
            guard path != "/" else { return search }
            let parent = (path as NSString).deletingLastPathComponent
            // A mount is a boundary: a binding above it belongs to another filesystem's tree.
            guard stat(parent, &info) == 0, info.st_dev == device else { return search }
            path = parent
        }
    }

    /// The binding in `file`; `nil` when there is no such file.
    ///
    /// The file is judged before it is opened (a file another user made unreadable must not stop
    /// your commands), then opened without following a link and checked to be the file judged.
    public static func read(_ file: URL) -> Result<AccountBinding, AccountBindingError>? {
        var info = stat()
        guard lstat(file.path, &info) == 0 else {
            return errno == ENOENT || errno == ENOTDIR ? nil : .failure(.untrusted("\(file.path) cannot be examined; chappie ignores it"))
        }
        if info.st_mode & S_IFMT == S_IFLNK {
            return .failure(.untrusted("\(file.path) is a symbolic link; chappie ignores it (write the name into the file itself)"))
        }
        if let reason = untrusted(info, file: file) { return .failure(.untrusted(reason)) }
        let descriptor = open(file.path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else {
            return .failure(.untrusted("\(file.path) cannot be read (\(String(cString: strerror(errno)))); chappie ignores it"))
        }
        defer { close(descriptor) }
        var opened = stat()
        guard fstat(descriptor, &opened) == 0, opened.st_dev == info.st_dev, opened.st_ino == info.st_ino else {
            return .failure(.untrusted("\(file.path) changed while chappie read it; chappie ignores it"))
        }
        var bytes = [UInt8](repeating: 0, count: maximumSize + 1)
        let count = Foundation.read(descriptor, &bytes, bytes.count)
        guard count >= 0 else { return .failure(.untrusted("\(file.path) cannot be read; chappie ignores it")) }
        guard count <= maximumSize else { return .failure(.notAName(file, "it is longer than \(maximumSize) bytes")) }
        // A byte-order mark (as some editors write) is no part of a name.
        let text = String(decoding: bytes[..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines.union(["\u{FEFF}"]))
        do {
            return .success(AccountBinding(name: try AccountName(text), file: file))
        } catch {
            return .failure(.notAName(file, "\(error)"))
        }
    }

    /// Why another user could change the file or replace it; `nil` when none could. Group write is
    /// allowed for the user's private group (a umask of 002), as for Codex homes.
    private static func untrusted(_ info: stat, file: URL) -> String? {
        guard info.st_mode & S_IFMT == S_IFREG else { return "\(file.path) is not a regular file; chappie ignores it" }
        switch PathOwnership.problem(info) {
        case .ownedByAnother(let uid): return "\(file.path) belongs to another user (uid \(uid)); chappie ignores it"
        case .writableByAll, .writableByGroup: return "\(file.path) can be written by other users; chappie ignores it (chmod go-w \(file.path))"
        case nil: break
        }
        var directory = stat()
        let parent = file.deletingLastPathComponent().path
        guard stat(parent, &directory) == 0 else { return nil }
        if PathOwnership.problem(directory, stickyAllowed: true) != nil {
            return "\(file.path) is in a directory other users can write, who could replace it; chappie ignores it"
        }
        return nil
    }

    /// Writes `directory`'s binding (mode 0644: the name is no secret, and others may read it),
    /// replacing one that is there. Returns the file.
    ///
    /// - Throws: ``AccountBindingError/unwritable(_:_:)``.
    @discardableResult
    public static func write(_ name: AccountName, in directory: URL) throws(AccountBindingError) -> URL {
        let file = directory.appendingPathComponent(fileName)
        var info = stat()
        if lstat(file.path, &info) == 0, info.st_mode & S_IFMT != S_IFREG {
            throw .unwritable(file, "it is not a regular file; remove it first")
        }
        // A new file of its own, its mode set on the descriptor, then renamed into place: nothing is
        // ever done by path to what another user could have swapped in meanwhile.
        let temporary = directory.appendingPathComponent(".\(fileName).\(getpid()).\(UInt32.random(in: 0...UInt32.max))")
        let descriptor = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw .unwritable(file, String(cString: strerror(errno))) }
        let bytes = Array((name.rawValue + "\n").utf8)
        let written = bytes.withUnsafeBytes { Foundation.write(descriptor, $0.baseAddress, $0.count) }
        let ready = written == bytes.count && fchmod(descriptor, 0o644) == 0 && fsync(descriptor) == 0
        let reason = String(cString: strerror(errno))
        close(descriptor)
        guard ready, rename(temporary.path, file.path) == 0 else {
            let failure = ready ? String(cString: strerror(errno)) : reason
            unlink(temporary.path)
            throw .unwritable(file, failure)
        }
        return file
    }

    /// Removes `directory`'s binding; returns whether there was one.
    ///
    /// - Throws: ``AccountBindingError/unwritable(_:_:)``.
    public static func remove(in directory: URL) throws(AccountBindingError) -> Bool {
        let file = directory.appendingPathComponent(fileName)
        var info = stat()
        guard lstat(file.path, &info) == 0 else { return false }
        guard unlink(file.path) == 0 else { throw .unwritable(file, String(cString: strerror(errno))) }
        return true
    }
}

/// A `.chappie-account` file that cannot be used.
public enum AccountBindingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Another user could change it: passed over (see ``AccountBinding``).
    case untrusted(String)
    /// It holds no account name.
    case notAName(URL, String)
    /// It could not be written or removed.
    case unwritable(URL, String)

    /// What is wrong and what to do.
    public var description: String {
        switch self {
        case .untrusted(let reason): reason
        case .notAName(let file, let reason):
            "\(file.path) does not hold an account name (\(reason)); write one with chappie bind NAME there, or remove it with chappie unbind"
        case .unwritable(let file, let reason): "\(file.path) cannot be written: \(reason)"
        }
    }
}
