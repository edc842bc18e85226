#!/usr/bin/env bash
# Runs Examples/HostTools against a local emulator whose scripted model calls the example's two
# tools: get_time (runs on its own) and list_directory (asks you first: answer y, n or a).
# Run from the repository root (make example does). The emulator always stops, even on failure.
set -euo pipefail

bin=${CHAPPIE_BIN:-$(swift build --show-bin-path)}
work=$(mktemp -d -t chappie-example.XXXXXX)
chmod 700 "$work"
. scripts/emulator-lib.sh
install_cleanup example

start_emulator emulator --auto-approve --auto-approve-delay 0.5 --device-code-interval 1
mkdir -p "$work/files" && touch "$work/files/notes.txt" "$work/files/plan.md"
script() {
  curl -sf -X POST -H 'Content-Type: application/json' -d "$1" "$emulator_address/_emulator/tools/script" > /dev/null
}
script '{"name":"get_time","arguments":"{\"zone\":\"Europe/Paris\"}"}'
script "{\"name\":\"list_directory\",\"arguments\":\"{\\\"path\\\":\\\"$work/files\\\"}\"}"

"$bin/chappie-example-host-tools" --issuer "$emulator_address" --backend "$emulator_address/backend-api" --home "$work/home" \
  "What time is it in Paris?" "What is in my files directory?"

# The seed documents' snippets as one program: sign-in states, a handle, usage windows and backoff.
echo
"$bin/chappie-example-seed-snippets" --issuer "$emulator_address" --backend "$emulator_address/backend-api" --home "$work/home" \
  "Tell me about Paris."
