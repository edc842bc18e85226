import ChappieCore
import ChappieService
import Testing

@Suite("The words of a command line, and how a failed-over job is resumed")
struct ResumeCommandTests {
    @Test(
        "Quotes, escapes and blanks split as docs/cli.md says; nothing is expanded",
        arguments: [
            (#"codex exec resume {session} go"#, ["codex", "exec", "resume", "{session}", "go"]),
            (#"sh -c 'echo "$HOME" | wc'"#, ["sh", "-c", #"echo "$HOME" | wc"#]),
            (#"say "a \"b\" \\ \n""#, ["say", #"a "b" \ \n"#]),
            (#"a\ b 'it'\''s' ''"#, ["a b", "it's", ""]),
            ("  tab\there\nnext  ", ["tab", "here", "next"]),
            (#"~/bin/x *.txt $VAR"#, ["~/bin/x", "*.txt", "$VAR"]),
            // A quote or a blank that a combining mark follows is still one (scalars, not characters).
            ("a'\u{301}b' c\u{20}\u{301}d", ["a\u{301}b", "c", "\u{301}d"]),
        ])
    func splits(_ line: String, _ words: [String]) throws {
        #expect(try CommandWords.split(line) == words)
    }

    @Test(
        "What is not a command line is refused, saying why",
        arguments: [
            ("sh 'open", CommandWords.Problem.unterminatedQuote("'")), (#"sh "open"#, .unterminatedQuote("\"")),
            (#"sh end\"#, .trailingBackslash), ("  \n", .empty), ("sh a\0b", .nulCharacter),
        ])
    func refuses(_ line: String, _ problem: CommandWords.Problem) {
        #expect(throws: problem) { try CommandWords.split(line) }
    }

    @Test("A codex exec job resumes with its program and options, its images and prompt left out")
    func codexDefault() throws {
        let job = [
            "/opt/codex/bin/codex", "-c", "model=\"o3\"", "exec", "--json", "-C", "/src/app", "-i", "shot.png", "--skip-git-repo-check",
            "-o", "last.txt", "fix the tests",
        ]
        let resume = try ResumeCommand.codexDefault(for: job)
        #expect(
            resume.command(session: "0193f0c4-aaaa-7bbb-8ccc-000000000001")
                == [
                    "/opt/codex/bin/codex", "-c", "model=\"o3\"", "exec", "--json", "-C", "/src/app", "--skip-git-repo-check", "-o", "last.txt",
                    "resume", "0193f0c4-aaaa-7bbb-8ccc-000000000001", ResumeCommand.continuation,
                ])
        // A prompt after -- and one read from stdin (-) are prompts too.
        #expect(
            try ResumeCommand.codexDefault(for: ["codex", "e", "--", "-x"]).template == [
                "codex", "e", "resume", "{session}", ResumeCommand.continuation,
            ])
        #expect(
            try ResumeCommand.codexDefault(for: ["codex", "exec", "-"]).template.suffix(3) == ["resume", "{session}", ResumeCommand.continuation])
    }

    @Test(
        "Jobs --failover cannot resume by itself need --resume",
        arguments: [
            ["make", "test"], ["codex"], ["codex", "resume", "--last"], ["codex", "exec", "resume", "--last", "go"],
            ["codex", "exec", "--ephemeral", "hi"],
            ["codex", "exec", "one", "two"],
        ])
    func needsResume(_ job: [String]) {
        #expect(throws: ServiceError.self) { try ResumeCommand.codexDefault(for: job) }
    }

    @Test("--resume is split into words and must place the session")
    func given() throws {
        let resume = try ResumeCommand(parsing: #"my-agent --continue "{session}" --note 'from {session}'"#)
        #expect(resume.command(session: "s1") == ["my-agent", "--continue", "s1", "--note", "from s1"])
        #expect(throws: ServiceError.self) { try ResumeCommand(parsing: "my-agent --continue") }
        #expect(throws: ServiceError.self) { try ResumeCommand(parsing: "my-agent '{session}") }
    }
}
