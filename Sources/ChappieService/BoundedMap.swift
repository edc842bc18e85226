/// Applies `transform` to every element with at most `concurrency` running at once, and returns the
/// results in the order of `elements`.
func boundedMap<Element: Sendable, Result: Sendable>(
    _ elements: [Element], concurrency: Int, _ transform: @escaping @Sendable (Element) async -> Result
) async -> [Result] {
    await withTaskGroup(of: (Int, Result).self) { group in
        var results: [(Int, Result)] = []
        results.reserveCapacity(elements.count)
        for (index, element) in elements.enumerated() {
            if index >= max(1, concurrency), let finished = await group.next() {
                results.append(finished)
            }
            group.addTask { (index, await transform(element)) }
        }
        for await finished in group {
            results.append(finished)
        }
        return results.sorted { $0.0 < $1.0 }.map(\.1)
    }
}
