import ChappieFuzzing
import Foundation

/// The target `CHAPPIE_FUZZ_TARGET` names (scripts/fuzz.sh sets it), read once.
private let target: FuzzTarget = {
    let name = ProcessInfo.processInfo.environment["CHAPPIE_FUZZ_TARGET"] ?? ""
    guard let target = FuzzTarget(rawValue: name) else {
        fatalError("set CHAPPIE_FUZZ_TARGET to one of: \(FuzzTarget.allCases.map(\.rawValue).joined(separator: ", "))")
    }
    return target
}()

/// libFuzzer's entry: one input. A broken promise is a crash, so that libFuzzer keeps the input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let broken = target.run(Data(bytes: bytes, count: count))
    if let first = broken.first { fatalError("\(target.rawValue): \(first)") }
    return 0
}
