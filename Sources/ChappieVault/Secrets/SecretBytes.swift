internal import CSodium
public import Foundation

/// Secret bytes in one buffer that is locked in memory where the system allows it and zeroed with
/// `sodium_memzero` when released.
///
/// The bytes never change after creation, so the type is `Sendable`. Copies that leave this buffer
/// (a `String` or `Data` made from it) are not covered; keep secrets here as long as possible.
///
/// ```swift
/// let key = SecretBytes.random(count: 32)
/// key.withUnsafeBytes { bytes in use(bytes) }
/// ```
public final class SecretBytes: @unchecked Sendable, CustomStringConvertible {
    private let pointer: UnsafeMutableRawPointer
    /// The number of bytes.
    public let count: Int

    /// Fills a new buffer of `count` bytes with `fill`, which must write every byte.
    public init(count: Int, fill: (UnsafeMutableRawBufferPointer) throws -> Void) rethrows {
        _ = Sodium.initialised
        self.count = count
        pointer = .allocate(byteCount: max(count, 1), alignment: 16)
        sodium_mlock(pointer, max(count, 1))
        do {
            try fill(UnsafeMutableRawBufferPointer(start: pointer, count: count))
        } catch {
            sodium_munlock(pointer, max(count, 1))
            pointer.deallocate()
            throw error
        }
    }

    /// Copies bytes into a new secret buffer.
    public convenience init(copying bytes: some Collection<UInt8>) {
        self.init(count: bytes.count) { buffer in _ = buffer.initializeMemory(as: UInt8.self, from: bytes) }
    }

    /// Copies a string's UTF-8 into a new secret buffer.
    public convenience init(utf8 string: String) {
        self.init(copying: Array(string.utf8))
    }

    deinit {
        // sodium_munlock zeroes the memory before unlocking it.
        sodium_munlock(pointer, max(count, 1))
        pointer.deallocate()
    }

    /// `count` random bytes from libsodium's CSPRNG.
    public static func random(count: Int) -> SecretBytes {
        SecretBytes(count: count) { buffer in randombytes_buf(buffer.baseAddress!, count) }
    }

    /// Lends the bytes; do not let them escape `body`.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    /// Compares with other secret bytes in time that does not depend on where they differ.
    public func constantTimeEquals(_ other: SecretBytes) -> Bool {
        guard count == other.count else { return false }
        return sodium_memcmp(pointer, other.pointer, count) == 0
    }

    /// A copy as `Data`, for the boundary where a library needs one (that copy is not zeroed).
    public func unprotectedData() -> Data {
        Data(bytes: pointer, count: count)
    }

    /// Never the bytes: only their count.
    public var description: String { "SecretBytes(\(count) bytes)" }
}

extension Data {
    /// Overwrites the bytes with zeros (for a `Data` that held a secret and is about to be released).
    public mutating func zeroize() {
        let count = self.count
        withUnsafeMutableBytes { buffer in
            if let base = buffer.baseAddress { sodium_memzero(base, count) }
        }
    }
}
