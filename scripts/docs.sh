#!/usr/bin/env bash
# Builds the Chappie SDK's DocC catalog with warnings as errors, so that every symbol link in its
# doc comments and in Sources/Chappie/Chappie.docc resolves. Uses the debug build's modules (run
# after `swift build`); writes the archive to .build/docs/Chappie.doccarchive.
set -euo pipefail
cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}
build=$($SWIFT build --show-bin-path)
graphs=.build/docs/symbol-graphs
rm -rf "$graphs" && mkdir -p "$graphs"
maps=()
# Every C module map of the build (the -tool copies duplicate the plain ones).
while IFS= read -r map; do maps+=(-Xcc "-fmodule-map-file=$map"); done < <(find "$build" -maxdepth 3 -name module.modulemap -not -path '*-tool.build/*')
# ChappieCore's types are part of the SDK (`import Chappie` re-exports them).
swift-symbolgraph-extract -module-name Chappie -target "$(uname -m)-unknown-linux-gnu" -I "$build/Modules" \
    -I Sources/CSodium -I Sources/CZstd "${maps[@]}" -minimum-access-level public -output-dir "$graphs" \
    -experimental-allowed-reexported-modules=ChappieCore
docc convert Sources/Chappie/Chappie.docc --additional-symbol-graph-dir "$graphs" --output-dir .build/docs/Chappie.doccarchive \
    --fallback-display-name Chappie --fallback-bundle-identifier dev.chappie.Chappie --warnings-as-errors
echo "DocC: Sources/Chappie/Chappie.docc builds without warnings (.build/docs/Chappie.doccarchive)"
