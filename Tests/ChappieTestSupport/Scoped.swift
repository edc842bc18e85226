/// Something a test starts and must stop however the test ends: an emulator and data directory
/// (``ChappieTestbed``), a PostgreSQL server, a fleet of machines.
public protocol TestFixture: Sendable {
    /// Stops it and removes what it made.
    func stop() async
}

extension ChappieTestbed: TestFixture {}
extension PostgresServer: TestFixture {}

/// Runs `body` while `fixture` runs, then stops it and waits for that, whether `body` returned or
/// threw. A `defer { Task { await fixture.stop() } }` would start the stop and not wait for it.
public func whileRunning<Fixture: TestFixture, T>(_ fixture: Fixture, _ body: () async throws -> T) async throws -> T {
    let value: T
    do {
        value = try await body()
    } catch {
        await fixture.stop()
        throw error
    }
    await fixture.stop()
    return value
}

/// Starts a testbed (an emulator, auto-approving device codes unless other arguments are given,
/// and a fresh data directory), runs `body` with it, and stops it, however `body` ends.
public func withTestbed<T>(
    emulatorArguments: [String] = ["--auto-approve", "--auto-approve-delay", "0", "--device-code-interval", "1"],
    _ body: (ChappieTestbed) async throws -> T
) async throws -> T {
    let testbed = try await ChappieTestbed.start(emulatorArguments: emulatorArguments)
    return try await whileRunning(testbed) { try await body(testbed) }
}
