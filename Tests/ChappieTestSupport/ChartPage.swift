import Foundation
import FoundationXML

/// What an XML parser finds in one of chappie's HTML pages (the usage report, the dashboard): each
/// `<svg class="chart">` with its attributes, its polyline's point count and its reset lines, and
/// every element name. Parsing fails on a page that is not well-formed.
public struct ChartPage: Sendable {
    /// One chart.
    public struct Chart: Sendable {
        /// The `<svg>` element's attributes (`data-account`, `data-window`, `data-points`, …).
        public var attributes: [String: String]
        /// How many points its polyline joins (0 when it has none).
        public var points = 0
        /// How many dots (`<circle class="point">`) it has.
        public var dots = 0
        /// How many reset lines it has.
        public var resets = 0
        /// How many marks its time axis has.
        public var ticks = 0

        /// `ACCOUNT/WINDOW`, such as `ada/5h`.
        public var key: String { "\(attributes["data-account"] ?? "")/\(attributes["data-window"] ?? "")" }
    }

    /// The charts, in page order.
    public var charts: [Chart] = []
    /// Every element name in the page.
    public var elements: Set<String> = []

    /// Parses `page`; throws with the parser's message when it is not well-formed XML.
    public init(_ page: String) throws {
        let parser = XMLParser(data: Data(page.utf8))
        let reader = Reader()
        parser.delegate = reader
        guard parser.parse() else {
            throw ParseFailure(message: parser.parserError.map { "\($0)" } ?? "the page is not well-formed")
        }
        charts = reader.charts
        elements = reader.elements
    }

    /// Why a page did not parse.
    public struct ParseFailure: Error, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    private final class Reader: NSObject, XMLParserDelegate {
        var charts: [Chart] = []
        var elements: Set<String> = []

        func parser(
            _ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]
        ) {
            elements.insert(name)
            if name == "svg", attributes["class"] == "chart" { charts.append(Chart(attributes: attributes)) }
            guard !charts.isEmpty else { return }
            if name == "polyline" { charts[charts.count - 1].points = attributes["points"]?.split(separator: " ").count ?? 0 }
            if name == "circle", attributes["class"] == "point" { charts[charts.count - 1].dots += 1 }
            if name == "line", attributes["class"] == "reset" { charts[charts.count - 1].resets += 1 }
            if name == "line", attributes["class"] == "tick" { charts[charts.count - 1].ticks += 1 }
        }
    }
}
