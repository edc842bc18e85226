import Synchronization

extension Task where Success: Sendable {
    /// The task's result, or `nil` as soon as the caller is cancelled, even when the task does not
    /// stop at once (an approval handler that waits for a person, a refresh already at the issuer).
    /// The task is cancelled then too, and goes on as far as it must.
    func resultUnlessCancelled() async -> Result<Success, Failure>? {
        let waiting = Mutex<CheckedContinuation<Result<Success, Failure>?, Never>?>(nil)
        let resume: @Sendable (Result<Success, Failure>?) -> Void = { result in waiting.withLock { $0.take() }?.resume(returning: result) }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                waiting.withLock { $0 = continuation }
                if Task<Never, Never>.isCancelled { resume(nil) }
                Task<Void, Never> { resume(await self.result) }
            }
        } onCancel: {
            self.cancel()
            resume(nil)
        }
    }
}
