public import Testing

extension Tag {
    /// Runs real processes (the chappie binary, the emulator, PostgreSQL, the Codex CLI) or waits on
    /// real time: `make test-unit` leaves these out.
    @Tag public static var slow: Self
}
