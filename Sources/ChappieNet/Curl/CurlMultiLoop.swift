internal import CCurl
import Foundation
import Synchronization

/// One libcurl multi handle and the thread that drives it.
///
/// Every transfer of an ``ChappieHTTPClient`` runs on this one multi handle, so connections (and HTTP/2
/// streams) are reused across requests. Other threads never touch the multi handle: they queue an
/// operation under the lock and wake the loop with `curl_multi_wakeup`, the one multi call libcurl
/// allows from another thread.
final class CurlMultiLoop: Sendable {
    private enum Operation {
        case add(CurlTransfer)
        case cancel(CurlTransfer)
    }

    private struct Shared {
        var operations: [Operation] = []
        /// The client is gone: exit once no transfer is left.
        var released = false
        /// The multi handle has been cleaned up: wake nobody.
        var closed = false
    }

    // The multi handle is used by the loop thread only, and by `curl_multi_wakeup` under `shared`'s lock.
    private nonisolated(unsafe) let multi: UnsafeMutableRawPointer
    private let shared = Mutex(Shared())

    /// - Throws: ``ChappieHTTPClientError`` when libcurl cannot be loaded.
    init() throws(ChappieHTTPClientError) {
        try Curl.ensureLoaded()
        guard let multi = ccurl_multi_init() else { fatalError("curl_multi_init failed: out of memory") }
        self.multi = multi
        let thread = Thread { [self] in self.run() }
        thread.name = "chappie.curl"
        thread.start()
    }

    /// Starts a transfer; its continuation or stream reports the outcome.
    func add(_ transfer: CurlTransfer) {
        enqueue(.add(transfer))
    }

    /// Stops a transfer that is queued or running; it fails with `CancellationError`.
    func cancel(_ transfer: CurlTransfer) {
        shared.withLock { state in
            transfer.cancelRequested = true
            state.operations.append(.cancel(transfer))
            if !state.closed { ccurl_multi_wakeup(multi) }
        }
    }

    /// Lets the loop end once its last transfer has finished.
    func release() {
        shared.withLock { state in
            state.released = true
            if !state.closed { ccurl_multi_wakeup(multi) }
        }
    }

    private func enqueue(_ operation: Operation) {
        shared.withLock { state in
            state.operations.append(operation)
            if !state.closed { ccurl_multi_wakeup(multi) }
        }
    }

    // MARK: The loop thread

    private func run() {
        var transfers: [UnsafeMutableRawPointer: CurlTransfer] = [:]
        while true {
            let (operations, released) = shared.withLock { state in
                let batch = state.operations.map { operation in
                    // Read the flag under the lock: a cancel queued before its add is seen here.
                    if case .add(let transfer) = operation { return (operation, transfer.cancelRequested) }
                    return (operation, false)
                }
                state.operations.removeAll()
                return (batch, state.released)
            }
            for (operation, cancelledBeforeStart) in operations {
                switch operation {
                case .add(let transfer):
                    if cancelledBeforeStart {
                        transfer.fail(CancellationError())
                    } else if ccurl_multi_add_handle(multi, transfer.easy) == CURLM_OK {
                        transfers[transfer.easy] = transfer
                    } else {
                        transfer.fail(ChappieHTTPClientError(code: .transferFailed, message: "curl_multi_add_handle failed"))
                    }
                case .cancel(let transfer):
                    if transfers.removeValue(forKey: transfer.easy) != nil {
                        ccurl_multi_remove_handle(multi, transfer.easy)
                        transfer.fail(CancellationError())
                    }
                }
            }
            if released && transfers.isEmpty {
                let leftOver = shared.withLock { state in
                    state.closed = state.operations.isEmpty
                    return !state.closed
                }
                if !leftOver { break }
                continue
            }

            var running: Int32 = 0
            ccurl_multi_perform(multi, &running)
            var easy: UnsafeMutableRawPointer?
            var result = CURLE_OK
            while ccurl_multi_next_done(multi, &easy, &result) == 1 {
                guard let handle = easy, let transfer = transfers.removeValue(forKey: handle) else { continue }
                ccurl_multi_remove_handle(multi, handle)
                transfer.finished(result)
            }
            var ready: Int32 = 0
            ccurl_multi_poll(multi, nil, 0, 1000, &ready)
        }
        ccurl_multi_cleanup(multi)
    }
}
