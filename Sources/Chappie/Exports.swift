// The SDK's value types and errors (ChappieAuthError, ChappieAccountInfo, ChappiePlan, …) come with
// `import Chappie`.
@_exported public import ChappieCore
