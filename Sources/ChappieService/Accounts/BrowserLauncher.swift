import Foundation

/// Opens a URL in the user's browser for the browser sign-in: the command in `$BROWSER` (the first
/// of a `:`-separated list; `%s` stands for the URL, else the URL is appended), else `xdg-open`
/// when there is a desktop (`$DISPLAY` or `$WAYLAND_DISPLAY`). The browser's output goes nowhere,
/// so chappie's own output (`--json`) stays clean; chappie does not wait for it.
enum BrowserLauncher {
    /// Starts the browser on `url`; `false` when there is none to start (or it could not start).
    static func open(_ url: URL, environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        let script: String
        if let browser = environment["BROWSER"]?.split(separator: ":").first.map(String.init), !browser.isEmpty {
            let quoted = ["'%s'", "\"%s\""].reduce(browser) { $0.replacingOccurrences(of: $1, with: "%s") }
            script = quoted.contains("%s") ? quoted.replacingOccurrences(of: "%s", with: "\"$1\"") : quoted + " \"$1\""
        } else if !(environment["DISPLAY"] ?? "").isEmpty || !(environment["WAYLAND_DISPLAY"] ?? "").isEmpty {
            script = "exec xdg-open \"$1\""
        } else {
            return false
        }
        // The URL is a positional parameter, never part of the script: nothing in it is run.
        return spawn(["/bin/sh", "-c", script, "sh", url.absoluteString])
    }

    private static func spawn(_ arguments: [String]) -> Bool {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var argv = arguments.map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        // The sign-in's listening socket (and anything else of chappie's) must not live on in the browser.
        ProcessReplacement.markDescriptorsCloseOnExec()
        var pid = pid_t()
        guard posix_spawn(&pid, arguments[0], &actions, nil, &argv, environ) == 0 else { return false }
        // Reaped in the background, so that no zombie is left while chappie waits for the callback.
        let child = pid
        DispatchQueue.global().async {
            var status: Int32 = 0
            waitpid(child, &status, 0)
        }
        return true
    }
}
