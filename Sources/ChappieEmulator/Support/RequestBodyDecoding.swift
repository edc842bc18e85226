import CZstd
import CompressNIO
import Foundation
import NIOCore

/// Undoes a request's `Content-Encoding` (`zstd`, `gzip`, or none), as the real backend does for
/// the Codex CLI's compressed request bodies (docs/protocol.md §8.3).
enum RequestBodyDecoding {
    /// Decoding failed: the encoding is unknown, or the body is not valid in it.
    struct Failure: Error {
        let message: String
    }

    /// The largest decoded body accepted.
    static let limit = 16 << 20

    /// The decoded body.
    static func decode(_ body: Data, contentEncoding: String?) throws(Failure) -> Data {
        let encodings = (contentEncoding ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        var data = body
        // Codings are listed in the order they were applied: undo them last to first.
        for encoding in encodings.reversed() where !encoding.isEmpty && encoding != "identity" {
            switch encoding {
            case "zstd": data = try zstd(data)
            case "gzip", "x-gzip": data = try gzip(data)
            default: throw Failure(message: "Content-Encoding \(encoding) is not supported (zstd, gzip).")
            }
        }
        return data
    }

    private static func gzip(_ body: Data) throws(Failure) -> Data {
        var buffer = ByteBuffer(bytes: body)
        do {
            let decoded = try buffer.decompress(with: .gzip(), maxSize: limit)
            return Data(decoded.readableBytesView)
        } catch {
            throw Failure(message: "The request body is not valid gzip.")
        }
    }

    private static func zstd(_ body: Data) throws(Failure) -> Data {
        guard let stream = ZSTD_createDStream() else { throw Failure(message: "zstd could not start.") }
        defer { ZSTD_freeDStream(stream) }
        var output = Data()
        var chunk = [UInt8](repeating: 0, count: ZSTD_DStreamOutSize())
        var finished = false
        let failure: Failure? = body.withUnsafeBytes { raw -> Failure? in
            var input = ZSTD_inBuffer(src: raw.baseAddress, size: raw.count, pos: 0)
            while true {
                let (result, produced) = chunk.withUnsafeMutableBytes { out -> (Int, Int) in
                    var buffer = ZSTD_outBuffer(dst: out.baseAddress, size: out.count, pos: 0)
                    let result = ZSTD_decompressStream(stream, &buffer, &input)
                    return (result, buffer.pos)
                }
                if ZSTD_isError(result) != 0 { return Failure(message: "The request body is not valid zstd.") }
                output.append(contentsOf: chunk[..<produced])
                if output.count > limit { return Failure(message: "The decoded request body is larger than 16 MiB.") }
                finished = result == 0
                // All input read and nothing more held back: done (a finished frame, or a truncated one).
                if input.pos == input.size && produced < chunk.count { break }
            }
            return nil
        }
        if let failure { throw failure }
        guard finished else { throw Failure(message: "The zstd request body is truncated.") }
        return output
    }
}
