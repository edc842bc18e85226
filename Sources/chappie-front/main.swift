import ChappieFront

// `chappie`: the front binary. It answers the quickest commands itself and hands the rest to the
// full binary (docs/architecture.md, "Two binaries").
FrontBinary.run(CommandLine.arguments)
