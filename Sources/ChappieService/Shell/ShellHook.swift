public import ChappieCore
public import Foundation

/// `chappie hook bash|zsh|fish`: what `.nvmrc`, direnv and kubectl contexts do for Codex. In a
/// directory bound to an account (`chappie bind`), the shell's `CODEX_HOME` names that account's
/// Codex home (the one it owns, else a private one, as `exec` makes it), so that a plain `codex`
/// runs as the account; leaving it puts `CODEX_HOME` back as it was.
///
/// The script the shell evaluates once runs `chappie hook SHELL --apply` whenever the directory,
/// or its `.chappie-account`, changed since the last prompt; that prints the commands to evaluate.
/// Three variables carry the state between runs: `CHAPPIE_HOOK` (the hook is installed),
/// `CHAPPIE_HOOK_ACCOUNT` (whose home `CODEX_HOME` names now) and `CHAPPIE_HOOK_SAVED` (the
/// `CODEX_HOME` from before: `1:VALUE`, or `0:` when it was unset).
public enum ShellHook {
    /// A shell the hook is written for.
    public enum Shell: String, Sendable, CaseIterable {
        case bash, zsh, fish
    }

    /// The script to evaluate in the shell's start-up file (`eval "$(chappie hook bash)"`).
    public static func script(for shell: Shell) -> String {
        switch shell {
        case .bash:
            """
            # chappie's shell hook: in a directory bound with chappie bind, codex runs as its account.
            export CHAPPIE_HOOK=bash
            _chappie_hook() {
              local previous=$? key
              key="$PWD:$(command stat -c %Y.%i .chappie-account 2>/dev/null)"
              if [ "$key" != "${_CHAPPIE_HOOK_KEY-}" ]; then
                _CHAPPIE_HOOK_KEY=$key
                eval "$(command chappie hook bash --apply)"
              fi
              return $previous
            }
            case ";${PROMPT_COMMAND-};" in
              *";_chappie_hook;"*) ;;
              *) PROMPT_COMMAND="_chappie_hook${PROMPT_COMMAND:+;$PROMPT_COMMAND}" ;;
            esac

            """
        case .zsh:
            """
            # chappie's shell hook: in a directory bound with chappie bind, codex runs as its account.
            export CHAPPIE_HOOK=zsh
            _chappie_hook() {
              local key="$PWD:$(command stat -c %Y.%i .chappie-account 2>/dev/null)"
              if [[ "$key" != "${_CHAPPIE_HOOK_KEY-}" ]]; then
                _CHAPPIE_HOOK_KEY=$key
                eval "$(command chappie hook zsh --apply)"
              fi
            }
            autoload -Uz add-zsh-hook
            add-zsh-hook precmd _chappie_hook

            """
        case .fish:
            """
            # chappie's shell hook: in a directory bound with chappie bind, codex runs as its account.
            set -gx CHAPPIE_HOOK fish
            function __chappie_hook --on-event fish_prompt
                set -l stamp (command stat -c %Y.%i .chappie-account 2>/dev/null)
                set -l key "$PWD:$stamp"
                if test "$key" != "$__chappie_hook_key"
                    set -g __chappie_hook_key $key
                    command chappie hook fish --apply | source
                end
            end

            """
        }
    }

    /// The commands that point `CODEX_HOME` at `home` for `account`, or, with no home (the
    /// directory is bound to none, or its account's home could not be readied), put it back as it
    /// was before the hook changed it; nothing when there is nothing to change.
    ///
    /// - Parameter environment: The shell's, as the `--apply` run inherited it.
    public static func commands(for shell: Shell, account: AccountName?, home: URL?, environment: [String: String]) -> String {
        let applied = environment["CHAPPIE_HOOK_ACCOUNT"].flatMap { $0.isEmpty ? nil : $0 }
        var lines: [String] = []
        if let account, let home {
            if applied == nil {
                lines.append(export("CHAPPIE_HOOK_SAVED", environment["CODEX_HOME"].map { "1:" + $0 } ?? "0:", shell))
            }
            lines.append(export("CODEX_HOME", home.path, shell))
            lines.append(export("CHAPPIE_HOOK_ACCOUNT", account.rawValue, shell))
        } else if applied != nil {
            let saved = environment["CHAPPIE_HOOK_SAVED"] ?? "0:"
            lines.append(saved.hasPrefix("1:") ? export("CODEX_HOME", String(saved.dropFirst(2)), shell) : unset("CODEX_HOME", shell))
            lines.append(unset("CHAPPIE_HOOK_ACCOUNT", shell))
            lines.append(unset("CHAPPIE_HOOK_SAVED", shell))
        }
        return lines.map { $0 + "\n" }.joined()
    }

    private static func export(_ name: String, _ value: String, _ shell: Shell) -> String {
        shell == .fish ? "set -gx \(name) \(quoted(value, shell))" : "export \(name)=\(quoted(value, shell))"
    }

    private static func unset(_ name: String, _ shell: Shell) -> String {
        shell == .fish ? "set -e \(name)" : "unset \(name)"
    }

    /// A value in single quotes, as each shell reads them back unchanged.
    static func quoted(_ value: String, _ shell: Shell) -> String {
        switch shell {
        case .bash, .zsh: "'" + value.replacingOccurrences(of: "'", with: #"'\''"#) + "'"
        case .fish: "'" + value.replacingOccurrences(of: #"\"#, with: #"\\"#).replacingOccurrences(of: "'", with: #"\'"#) + "'"
        }
    }
}
