extension Duration {
    /// The duration in whole milliseconds, rounded down, never negative: for timeouts handed to C
    /// libraries and for log lines.
    public var wholeMilliseconds: Int {
        let (seconds, attoseconds) = components
        return max(0, Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000))
    }

    /// The duration in seconds, with its fraction.
    public var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
