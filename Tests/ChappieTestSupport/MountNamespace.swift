import Foundation

/// Whether this machine lets a test mount in a mount namespace of its own (root, and a container
/// that allows `unshare -m`): to hide a library, or to give chappie a small file system to fill.
public let canMountPrivately: Bool = {
    guard
        let process = try? ChildProcess(
            URL(fileURLWithPath: "/usr/bin/unshare"), ["-m", "sh", "-c", "mount --bind /dev/null /dev/null && mount -t tmpfs -o size=1m tmpfs /mnt"])
    else { return false }
    // A global's initializer cannot wait asynchronously; `unshare` is done in a moment.
    while process.isRunning { usleep(1000) }
    return process.exitStatus == 0
}()
