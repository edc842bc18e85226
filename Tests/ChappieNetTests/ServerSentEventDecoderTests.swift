import ChappieNet
import ChappieTestSupport
import Foundation
import Testing

@Suite("Server-sent events: the WHATWG event-stream rules")
struct ServerSentEventDecoderTests {
    /// Decodes a whole stream in one chunk, then ends it.
    private func decodeAll(_ text: String) -> [ServerSentEvent] {
        var decoder = ServerSentEventDecoder()
        let events = decoder.decode(Data(text.utf8))
        decoder.finish()
        return events
    }

    /// Decodes a stream one byte at a time, the harshest chunking.
    private func decodeByteByByte(_ bytes: [UInt8]) -> [ServerSentEvent] {
        var decoder = ServerSentEventDecoder()
        var events: [ServerSentEvent] = []
        for byte in bytes { events += decoder.decode([byte]) }
        decoder.finish()
        return events
    }

    @Test("LF, CRLF and CR all end lines", arguments: ["\n", "\r\n", "\r"])
    func lineEndings(_ newline: String) {
        let stream = "event: a\(newline)data: one\(newline)\(newline)data: two\(newline)\(newline)"
        let events = decodeAll(stream)
        #expect(events == [ServerSentEvent(type: "a", data: "one"), ServerSentEvent(data: "two")])
        #expect(decodeByteByByte(Array(stream.utf8)) == events)
    }

    @Test("A CRLF split across chunks is one line end, not two")
    func splitCRLF() {
        var decoder = ServerSentEventDecoder()
        #expect(decoder.decode(Data("data: x\r".utf8)).isEmpty)
        // Had the LF counted as a second line end, "x" would have been dispatched here.
        #expect(decoder.decode(Data("\ndata: y\r".utf8)).isEmpty)
        #expect(decoder.decode(Data("\n\r\n".utf8)) == [ServerSentEvent(data: "x\ny")])
    }

    @Test("Mixed line endings in one stream")
    func mixedLineEndings() {
        #expect(decodeAll("data: a\rdata: b\ndata: c\r\n\n") == [ServerSentEvent(data: "a\nb\nc")])
    }

    @Test("Lines starting with a colon are comments")
    func comments() {
        #expect(decodeAll(": keep-alive\n:\ndata: x\n: another\n\n") == [ServerSentEvent(data: "x")])
        #expect(decodeAll(": only a comment\n\n").isEmpty)
    }

    @Test("Several data lines join with line feeds; the trailing one is removed")
    func multiLineData() {
        #expect(decodeAll("data: first\ndata: second\ndata:\ndata: fourth\n\n") == [ServerSentEvent(data: "first\nsecond\n\nfourth")])
    }

    @Test("Only one space after the colon is removed")
    func spaceAfterColon() {
        #expect(decodeAll("data:no-space\n\n") == [ServerSentEvent(data: "no-space")])
        #expect(decodeAll("data:  two-spaces\n\n") == [ServerSentEvent(data: " two-spaces")])
        #expect(decodeAll("data: a: b\n\n") == [ServerSentEvent(data: "a: b")])
    }

    @Test("A line without a colon is a field with an empty value")
    func fieldWithoutColon() {
        #expect(decodeAll("data\ndata\n\n") == [ServerSentEvent(data: "\n")])
        #expect(decodeAll("event\ndata: x\n\n") == [ServerSentEvent(type: "message", data: "x")])
    }

    @Test("event sets the type for one event only; the default is message")
    func eventType() {
        let events = decodeAll("event: response.created\ndata: {}\n\ndata: plain\n\n")
        #expect(events.map(\.type) == ["response.created", "message"])
    }

    @Test("id persists across events, and an id with NUL is ignored")
    func lastEventID() {
        let events = decodeAll("id: 7\ndata: a\n\ndata: b\n\nid: x\u{0}y\ndata: c\n\nid\ndata: d\n\n")
        #expect(events.map(\.lastEventID) == ["7", "7", "7", ""])
    }

    @Test("An id with no data still sets the last event ID without dispatching")
    func idWithoutData() {
        let events = decodeAll("id: 42\n\ndata: later\n\n")
        #expect(events == [ServerSentEvent(data: "later", lastEventID: "42")])
    }

    @Test("retry sets the reconnection time only when it is all ASCII digits")
    func retry() {
        var decoder = ServerSentEventDecoder()
        _ = decoder.decode(Data("retry: 1500\n\n".utf8))
        #expect(decoder.reconnectionTime == 1500)
        _ = decoder.decode(Data("retry: 15s\nretry: -1\nretry: \nretry: 1.5\n\n".utf8))
        #expect(decoder.reconnectionTime == 1500)
        _ = decoder.decode(Data("retry:250\n\n".utf8))
        #expect(decoder.reconnectionTime == 250)
    }

    @Test("Unknown fields are ignored")
    func unknownFields() {
        #expect(decodeAll("foo: bar\ndata: x\nDATA: y\n\n") == [ServerSentEvent(data: "x")])
    }

    @Test("A blank line with no data dispatches nothing and resets the type")
    func emptyEvent() {
        #expect(decodeAll("event: ping\n\n\n\ndata: x\n\n") == [ServerSentEvent(data: "x")])
    }

    @Test("A leading BOM is skipped, even split across chunks")
    func byteOrderMark() {
        let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
        let body = Array("data: x\n\n".utf8)
        #expect(decodeByteByByte(bom + body) == [ServerSentEvent(data: "x")])
        var decoder = ServerSentEventDecoder()
        #expect(decoder.decode(Data(bom + body)) == [ServerSentEvent(data: "x")])
    }

    @Test("Only one leading BOM is skipped; a second is part of the field name")
    func secondBOMIsNotSkipped() {
        let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
        // The second BOM makes the first line a field named "\u{FEFF}data", which is ignored.
        #expect(decodeByteByByte(bom + bom + Array("data: x\n\ndata: y\n\n".utf8)) == [ServerSentEvent(data: "y")])
    }

    @Test("A final event without its blank line is discarded")
    func unterminatedFinalEvent() {
        var decoder = ServerSentEventDecoder()
        #expect(decoder.decode(Data("data: complete\n\ndata: partial\n".utf8)) == [ServerSentEvent(data: "complete")])
        #expect(decoder.finish() == true)
        var clean = ServerSentEventDecoder()
        _ = clean.decode(Data("data: complete\n\n".utf8))
        #expect(clean.finish() == false)
    }

    @Test("UTF-8 split across chunks decodes whole; invalid bytes become U+FFFD")
    func utf8() {
        let bytes = Array("data: héllo ✓\n\n".utf8)
        #expect(decodeByteByByte(bytes) == [ServerSentEvent(data: "héllo ✓")])
        #expect(decodeByteByByte(Array("data: a".utf8) + [0xFF] + Array("b\n\n".utf8)) == [ServerSentEvent(data: "a\u{FFFD}b")])
    }

    @Test("The real-shaped text stream decodes to its eight events, comment skipped")
    func fixtureTextStream() throws {
        let bytes = try Fixtures.data("responses-text.sse")
        var decoder = ServerSentEventDecoder()
        let events = decoder.decode(bytes)
        #expect(decoder.finish() == false)
        #expect(
            events.map(\.type) == [
                "response.created", "response.output_item.added",
                "response.output_text.delta", "response.output_text.delta", "response.output_text.delta",
                "codex.rate_limits", "response.output_item.done", "response.completed",
            ])
        let deltas = try events.filter { $0.type == "response.output_text.delta" }.map { event in
            let object = try #require(try JSONSerialization.jsonObject(with: Data(event.data.utf8)) as? [String: Any])
            return try #require(object["delta"] as? String)
        }
        #expect(deltas.joined() == "Hello! How can I help you today?")
        #expect(decodeByteByByte(Array(bytes)) == events)
    }

    @Test("The cut stream yields its complete events and reports the cut")
    func fixtureCutStream() throws {
        var decoder = ServerSentEventDecoder()
        let events = decoder.decode(try Fixtures.data("responses-cut.sse"))
        #expect(events.map(\.type) == ["response.created", "response.output_text.delta"])
        #expect(decoder.finish() == true)
    }

    @Test("Tool-call and failed streams decode with their JSON intact", arguments: ["responses-tool-call.sse", "responses-failed.sse"])
    func fixtureOtherStreams(_ name: String) throws {
        var decoder = ServerSentEventDecoder()
        let events = decoder.decode(try Fixtures.data(name))
        #expect(decoder.finish() == false)
        #expect(events.count == 3)
        for event in events {
            let object = try JSONSerialization.jsonObject(with: Data(event.data.utf8)) as? [String: Any]
            #expect(object?["type"] as? String == event.type)
        }
    }

    @Test("The async sequence adapter decodes chunked bodies")
    func asyncSequence() async throws {
        let bytes = try Fixtures.data("responses-text.sse")
        let chunks = AsyncStream<Data> { continuation in
            var index = 0
            while index < bytes.count {
                continuation.yield(bytes.subdata(in: index..<min(bytes.count, index + 7)))
                index += 7
            }
            continuation.finish()
        }
        var types: [String] = []
        for try await event in chunks.serverSentEvents { types.append(event.type) }
        #expect(types.count == 8)
        #expect(types.last == "response.completed")
    }

    @Test("A line past the limit ends the stream as malformed: the events before it are kept, nothing after, and nothing more is buffered")
    func endlessLine() throws {
        var decoder = ServerSentEventDecoder(maximumBytes: 1000)
        let before = decoder.decode(Data("data: first\n\n".utf8))
        #expect(before.map(\.data) == ["first"])
        // 10 chunks of 300 bytes with no line break: over the 1000-byte limit at the fourth.
        for _ in 0..<10 { #expect(decoder.decode(Data(repeating: UInt8(ascii: "x"), count: 300)).isEmpty) }
        #expect(decoder.exceededLimit)
        #expect(decoder.decode(Data("\ndata: later\n\n".utf8)).isEmpty, "nothing is decoded once the stream is malformed")
        #expect(decoder.finish() == false, "nothing was kept")
    }

    @Test("An event whose data lines add up past the limit ends the stream as malformed")
    func endlessEvent() throws {
        var decoder = ServerSentEventDecoder(maximumBytes: 1000)
        var events: [ServerSentEvent] = []
        for _ in 0..<20 { events += decoder.decode(Data("data: \(String(repeating: "y", count: 100))\n".utf8)) }
        #expect(decoder.exceededLimit && events.isEmpty)
        // Under the limit, the same lines make one event.
        var fitting = ServerSentEventDecoder(maximumBytes: 1 << 20)
        for _ in 0..<20 { events += fitting.decode(Data("data: \(String(repeating: "y", count: 100))\n".utf8)) }
        events += fitting.decode(Data("\n".utf8))
        #expect(events.count == 1 && events[0].data.count == 20 * 100 + 19)
    }

    @Test("The async sequence throws responseTooLarge past the limit, after the events before it")
    func sequenceThrowsPastTheLimit() async throws {
        let chunks = AsyncStream<Data> { continuation in
            continuation.yield(Data("data: ok\n\n".utf8))
            for _ in 0..<40 { continuation.yield(Data(repeating: UInt8(ascii: "z"), count: 1 << 20)) }
            continuation.finish()
        }
        var seen: [String] = []
        do {
            for try await event in chunks.serverSentEvents { seen.append(event.data) }
            Issue.record("no error past 16 MiB")
        } catch let error as ChappieHTTPClientError {
            #expect(error.code == .responseTooLarge && error.description.contains("16 MiB"), "\(error)")
        }
        #expect(seen == ["ok"])
    }
}
