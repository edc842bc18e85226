public import Foundation

/// An incremental decoder of `text/event-stream` bytes that follows the WHATWG rules.
///
/// - Lines end with LF, CRLF or CR, even when a CRLF is split across two chunks.
/// - A leading UTF-8 byte order mark is skipped; bytes are decoded as UTF-8 with replacement.
/// - Lines starting with `:` are comments. `field: value` loses one space after the colon; a line
///   without a colon is a field with an empty value. Unknown fields are ignored.
/// - `data` lines accumulate, joined with LF; `event` sets the type; `id` sets the last event ID
///   (unless it contains NUL) and persists; `retry` sets ``reconnectionTime`` when all ASCII digits.
/// - A blank line dispatches the event; with no data it dispatches nothing.
/// - At the end of the stream, an event without its blank line is discarded.
/// - A line, or an event's data, longer than ``maximumBytes`` ends the decoding: the stream is
///   malformed (``exceededLimit``), and nothing more of it is kept in memory. A reply with no line
///   break would otherwise grow without bound.
///
/// ```swift
/// var decoder = ServerSentEventDecoder()
/// for event in decoder.decode(Data("data: hello\n\n".utf8)) {
///     print(event.data)  // hello
/// }
/// ```
public struct ServerSentEventDecoder: Sendable {
    private static let bom: [UInt8] = [0xEF, 0xBB, 0xBF]

    private var line: [UInt8] = []
    private var data: [UInt8] = []
    private var eventType: [UInt8] = []
    private var lastEventIDBuffer: [UInt8] = []
    private var lastEventID = ""
    private var lastByteWasCR = false
    /// Bytes seen while still deciding whether the stream starts with a BOM; `nil` once decided.
    private var bomProbe: [UInt8]? = []

    /// The reconnection time in milliseconds most recently set by a `retry:` field.
    public private(set) var reconnectionTime: Int?

    /// The longest line, and the longest event's data, in bytes: 16 MiB by default, what the
    /// WebSocket client allows a message (`response.completed` repeats the whole output in one line).
    public let maximumBytes: Int

    /// Whether a line or an event went past ``maximumBytes``: the stream is malformed, and no
    /// event is decoded from here on.
    public private(set) var exceededLimit = false

    /// Creates a decoder at the start of a stream.
    public init(maximumBytes: Int = 16 << 20) {
        self.maximumBytes = maximumBytes
    }

    /// Decodes the next chunk of the stream.
    ///
    /// - Returns: The events the chunk completed, in order.
    public mutating func decode(_ chunk: Data) -> [ServerSentEvent] {
        chunk.withUnsafeBytes { decode(bytes: $0) }
    }

    /// Decodes the next chunk of the stream.
    ///
    /// - Returns: The events the chunk completed, in order.
    public mutating func decode(_ chunk: [UInt8]) -> [ServerSentEvent] {
        chunk.withUnsafeBytes { decode(bytes: $0) }
    }

    /// Ends the stream, discarding any event that had not been completed by a blank line.
    ///
    /// - Returns: Whether anything was discarded: a partial line or an undispatched event, the
    ///   mark of a stream cut mid-event.
    @discardableResult
    public mutating func finish() -> Bool {
        let discarded = !line.isEmpty || !data.isEmpty || !eventType.isEmpty || !(bomProbe?.isEmpty ?? true)
        line.removeAll()
        data.removeAll()
        eventType.removeAll()
        bomProbe = []
        lastByteWasCR = false
        return discarded
    }

    private mutating func decode(bytes: UnsafeRawBufferPointer) -> [ServerSentEvent] {
        var events: [ServerSentEvent] = []
        guard !exceededLimit else { return events }
        var start = 0
        if var probe = bomProbe {
            while start < bytes.count && probe.count < 3 {
                probe.append(bytes[start])
                start += 1
            }
            if probe.count < 3 && Self.bom.starts(with: probe) {
                bomProbe = probe
                return events
            }
            bomProbe = nil
            if probe != Self.bom {
                probe.withUnsafeBytes { scan($0, from: 0, into: &events) }
            }
        }
        scan(bytes, from: start, into: &events)
        return events
    }

    private mutating func scan(_ bytes: UnsafeRawBufferPointer, from start: Int, into events: inout [ServerSentEvent]) {
        var index = start
        var lineStart = start
        while index < bytes.count && !exceededLimit {
            let byte = bytes[index]
            if byte == 0x0A || byte == 0x0D {
                if byte == 0x0A && lastByteWasCR && index == lineStart && line.isEmpty {
                    // The LF of a CRLF whose CR ended the previous line.
                    lastByteWasCR = false
                    index += 1
                    lineStart = index
                    continue
                }
                guard appendToLine(bytes[lineStart..<index]) else { return }
                processLine(into: &events)
                line.removeAll(keepingCapacity: true)
                lastByteWasCR = byte == 0x0D
                index += 1
                lineStart = index
            } else {
                lastByteWasCR = false
                index += 1
            }
        }
        guard !exceededLimit else { return }
        _ = appendToLine(bytes[lineStart..<bytes.count])
    }

    /// Adds to the current line; `false` (and the stream malformed, its buffers freed) past the limit.
    private mutating func appendToLine(_ bytes: Slice<UnsafeRawBufferPointer>) -> Bool {
        guard line.count + bytes.count <= maximumBytes else {
            exceed()
            return false
        }
        line.append(contentsOf: bytes)
        return true
    }

    private mutating func exceed() {
        exceededLimit = true
        line = []
        data = []
        eventType = []
    }

    private mutating func processLine(into events: inout [ServerSentEvent]) {
        guard let first = line.first else {
            dispatch(into: &events)
            return
        }
        if first == UInt8(ascii: ":") { return }
        let field: ArraySlice<UInt8>
        var value: ArraySlice<UInt8>
        if let colon = line.firstIndex(of: UInt8(ascii: ":")) {
            field = line[..<colon]
            value = line[(colon + 1)...]
            if value.first == UInt8(ascii: " ") { value = value.dropFirst() }
        } else {
            field = line[...]
            value = []
        }
        switch String(decoding: field, as: UTF8.self) {
        case "data":
            guard data.count + value.count < maximumBytes else { return exceed() }
            data.append(contentsOf: value)
            data.append(0x0A)
        case "event":
            eventType = Array(value)
        case "id":
            if !value.contains(0) { lastEventIDBuffer = Array(value) }
        case "retry":
            if !value.isEmpty, value.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let time = Int(String(decoding: value, as: UTF8.self)) {
                reconnectionTime = time
            }
        default:
            break
        }
    }

    private mutating func dispatch(into events: inout [ServerSentEvent]) {
        lastEventID = String(decoding: lastEventIDBuffer, as: UTF8.self)
        defer {
            data.removeAll(keepingCapacity: true)
            eventType.removeAll()
        }
        guard !data.isEmpty else { return }
        data.removeLast()
        let type = eventType.isEmpty ? "message" : String(decoding: eventType, as: UTF8.self)
        events.append(ServerSentEvent(type: type, data: String(decoding: data, as: UTF8.self), lastEventID: lastEventID))
    }
}
