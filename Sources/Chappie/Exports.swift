// The SDK's value types and errors (ChappieAuthError, ChappieAccountInfo, ChappiePlan, …) come with
// `import Chappie`.
@_exported public import ChappieCore
// Where a configuration's store lives and where its key comes from.
@_exported public import struct ChappieStore.StoreOptions
