import Foundation

/// Replaces this process with a command (`execvp`), the way `chappie exec` hands over: the command
/// keeps chappie's process id, terminal and process group, so Ctrl-C and `kill` reach it directly and
/// its exit status is the one the caller sees; nothing of chappie outlives it.
public enum ProcessReplacement {
    /// Runs `command` (its first word looked up in `PATH` when it has no `/`) in place of this
    /// process, with `environment` added to the current one.
    ///
    /// Before the switch: buffered output is flushed; every descriptor above standard error is
    /// marked close-on-exec (the store, locks and sockets stay chappie's); signals chappie ignores
    /// or blocks (SIGINT, SIGTERM, SIGPIPE) get their default handling back.
    ///
    /// - Returns: Only when the command cannot be run: the exit status a shell would give (127 not
    ///   found, 126 found but not runnable) and why.
    public static func replace(with command: [String], adding environment: [String: String]) -> (status: Int32, reason: String) {
        precondition(!command.isEmpty, "an empty command")
        fflush(nil)
        for (name, value) in environment { setenv(name, value, 1) }
        markDescriptorsCloseOnExec()
        for number in [SIGINT, SIGTERM, SIGPIPE, SIGHUP, SIGQUIT] { signal(number, SIG_DFL) }
        var none = sigset_t()
        sigemptyset(&none)
        pthread_sigmask(SIG_SETMASK, &none, nil)

        var arguments = command.map { strdup($0) }
        arguments.append(nil)
        execvp(command[0], &arguments)
        let error = errno
        for argument in arguments { free(argument) }
        let reason = String(cString: strerror(error))
        return (error == ENOENT ? 127 : 126, "cannot run \(command[0]): \(reason)")
    }

    private static func markDescriptorsCloseOnExec() {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return }
        for descriptor in names.compactMap({ Int32($0) }) where descriptor > 2 {
            let flags = fcntl(descriptor, F_GETFD)
            if flags >= 0 { _ = fcntl(descriptor, F_SETFD, flags | FD_CLOEXEC) }
        }
    }
}
