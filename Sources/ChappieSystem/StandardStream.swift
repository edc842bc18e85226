import Glibc

/// Standard output or standard error, written best-effort.
///
/// A terminal closed under chappie (an SSH session dropped, a laptop lid shut) answers every write
/// with `EIO`, and a reader gone answers `EPIPE`. Foundation's `FileHandle.write(_:)` traps on
/// either, and a trap in the middle of a refresh loses the rotated token. What chappie prints is
/// for the person or program reading it: once nobody reads, the work goes on and the rest of the
/// text is dropped.
public enum StandardStream: Int32, Sendable {
    /// File descriptor 1.
    case output = 1
    /// File descriptor 2.
    case error = 2

    /// Writes `text`, or as much of it as the stream takes.
    public func write(_ text: String) {
        var text = text
        text.withUTF8 { write($0) }
    }

    /// Writes `bytes`, or as much of them as the stream takes.
    public func write(_ bytes: some Collection<UInt8>) {
        if bytes.withContiguousStorageIfAvailable({ write(UnsafeRawBufferPointer($0)) }) == nil {
            Array(bytes).withUnsafeBytes { write($0) }
        }
    }

    /// Writes the buffer whole; stops at the first error other than an interruption (a closed
    /// terminal's `EIO`, a gone reader's `EPIPE`, a full disk), without a word: where the stream
    /// goes is where a word would be said.
    public func write(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress else { return }
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.write(rawValue, base + offset, bytes.count - offset)
            if written < 0, errno == EINTR { continue }
            guard written > 0 else { return }
            offset += written
        }
    }
}
