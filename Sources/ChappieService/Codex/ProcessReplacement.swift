import Foundation

/// Replaces this process with a command (`execvp`), the way `chappie exec` hands over: the command
/// keeps chappie's process id, terminal and process group, so Ctrl-C and `kill` reach it directly and
/// its exit status is the one the caller sees; nothing of chappie outlives it.
public enum ProcessReplacement {
    /// Runs `command` (its first word looked up in `PATH` when it has no `/`) in place of this
    /// process, with `environment` added to the current one.
    ///
    /// Before the switch: buffered output is flushed; every descriptor above standard error but
    /// `keeping` is marked close-on-exec (the store, locks and sockets stay chappie's); the signals
    /// chappie changes (SIGINT, SIGTERM, SIGHUP, SIGPIPE) and the signal mask are put back as chappie found
    /// them (``recordInheritedSignals()``), so `nohup` and a shell's ignored signals still hold.
    ///
    /// - Returns: Only when the command cannot be run: the exit status a shell would give (127 not
    ///   found, 126 found but not runnable) and why.
    public static func replace(with command: [String], adding environment: [String: String], keeping: Set<Int32> = []) -> (
        status: Int32, reason: String
    ) {
        precondition(!command.isEmpty, "an empty command")
        fflush(nil)
        for (name, value) in environment { setenv(name, value, 1) }
        markDescriptorsCloseOnExec(keeping: keeping)
        let inherited = inheritedSignals
        for number in changedSignals { signal(number, inherited.ignored.contains(number) ? SIG_IGN : SIG_DFL) }
        var mask = inherited.mask
        pthread_sigmask(SIG_SETMASK, &mask, nil)

        var arguments = command.map { strdup($0) }
        arguments.append(nil)
        execvp(command[0], &arguments)
        let error = errno
        for argument in arguments { free(argument) }
        let reason = String(cString: strerror(error))
        return (error == ENOENT ? 127 : 126, "cannot run \(command[0]): \(reason)")
    }

    /// The signals chappie handles itself (Ctrl-C, termination, hang-up, broken pipes).
    static let changedSignals = [SIGINT, SIGTERM, SIGHUP, SIGPIPE]

    /// Which of ``changedSignals`` were ignored when chappie started, and the signal mask then.
    static let inheritedSignals: (ignored: Set<Int32>, mask: sigset_t) = {
        var ignored: Set<Int32> = []
        for number in changedSignals {
            var current = sigaction()
            // SIG_IGN is the handler whose address is 1.
            if sigaction(number, nil, &current) == 0, let handler = current.__sigaction_handler.sa_handler,
                unsafeBitCast(handler, to: Int.self) == 1
            {
                ignored.insert(number)
            }
        }
        var mask = sigset_t()
        pthread_sigmask(SIG_SETMASK, nil, &mask)
        return (ignored, mask)
    }()

    /// Whether `number` was ignored when chappie started (a script's `cmd &`, `nohup`): chappie
    /// leaves such a signal ignored.
    public static func ignoredAtStart(_ number: Int32) -> Bool {
        inheritedSignals.ignored.contains(number)
    }

    /// Notes the signal dispositions and mask chappie was started with; call it first thing, before
    /// chappie changes any.
    public static func recordInheritedSignals() {
        _ = inheritedSignals
    }

    /// Marks every descriptor above standard error but `keeping` close-on-exec, so that a program
    /// chappie starts gets none of chappie's files, locks or sockets.
    static func markDescriptorsCloseOnExec(keeping: Set<Int32> = []) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return }
        for descriptor in names.compactMap({ Int32($0) }) where descriptor > 2 && !keeping.contains(descriptor) {
            let flags = fcntl(descriptor, F_GETFD)
            if flags >= 0 { _ = fcntl(descriptor, F_SETFD, flags | FD_CLOEXEC) }
        }
    }
}
