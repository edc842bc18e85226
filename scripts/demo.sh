#!/usr/bin/env bash
# The chappie lifecycle against a local emulator, driven through the real binaries as a user would.
# Run from the repository root (make demo does).
# Starts chappie-emulator on an ephemeral loopback port and always stops it, even on failure.
set -euo pipefail

bin=$(swift build --show-bin-path)
work=$(mktemp -d -t chappie-demo.XXXXXX)
chmod 700 "$work"
emulator_pid=""

cleanup() {
  status=$?
  if [ -n "$emulator_pid" ] && kill -0 "$emulator_pid" 2>/dev/null; then
    kill -TERM "$emulator_pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$emulator_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$emulator_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
  if [ $status -ne 0 ]; then echo "demo: FAILED (exit $status); see the output above." >&2; fi
  exit $status
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step() {
  echo
  echo "==> $*"
}

step "Starting chappie-emulator on an ephemeral loopback port"
"$bin/chappie-emulator" --port 0 --auto-approve --auto-approve-delay 1 > "$work/emulator.out" 2> "$work/emulator.err" &
emulator_pid=$!
address=""
for _ in $(seq 100); do
  address=$(sed -n '1s/^listening on //p' "$work/emulator.out")
  [ -n "$address" ] && break
  kill -0 "$emulator_pid" 2>/dev/null || { cat "$work/emulator.err" >&2; echo "the emulator exited" >&2; exit 1; }
  sleep 0.1
done
[ -n "$address" ] || { echo "the emulator did not start within 10 seconds" >&2; exit 1; }
echo "    emulator at $address"

export CHAPPIE_HOME="$work/home"
chappie=("$bin/chappie")
service=(--issuer "$address" --backend "$address/backend-api")

step "chappie --version"
"${chappie[@]}" --version

step "chappie doctor (libraries, data directory, services)"
"${chappie[@]}" doctor "${service[@]}"

step "chappie doctor --json"
"${chappie[@]}" doctor --json "${service[@]}"

step "chappie accounts add personal (device-code sign-in; the emulator approves the code after 1 s)"
"${chappie[@]}" accounts add personal "${service[@]}"

step "chappie token personal (shown cut short here; scripts get the whole token)"
token=$("${chappie[@]}" token personal "${service[@]}")
echo "${token:0:16}… (${#token} characters)"

step "chappie refresh --all (the refresh token rotates, once)"
"${chappie[@]}" refresh --all "${service[@]}"

step "chappie accounts add team (a second account)"
"${chappie[@]}" accounts add team "${service[@]}"

step "Use some of personal's 5-hour window at the emulator, then chappie usage (polls both accounts)"
curl -s -X POST -d '{"five_hour_used_percent":72,"weekly_used_percent":30}' \
  "$address/_emulator/accounts/$("${chappie[@]}" accounts show personal --json | sed -n 's/.*"chatgptAccountID" : "\(.*\)".*/\1/p')/usage" > /dev/null
"${chappie[@]}" usage "${service[@]}"

step "chappie accounts switch --best (the account with the most headroom)"
"${chappie[@]}" accounts switch --best "${service[@]}"

step "chappie usage report --by day (CSV)"
"${chappie[@]}" usage report --by day --tz UTC --format csv

step "chappie accounts import (a Codex CLI auth.json, as ~/.codex/auth.json would hold)"
"${chappie[@]}" accounts import Tests/Fixtures/openai/codex-auth.json --name work

step "chappie accounts list"
"${chappie[@]}" accounts list

step "chappie accounts switch work --codex-home (Codex now reads this account's tokens)"
"${chappie[@]}" accounts switch work --codex-home "$work/codex"
ls -l "$work/codex/auth.json"

step "chappie key status, then key rotate (every credential resealed in one transaction)"
"${chappie[@]}" key status
"${chappie[@]}" key rotate
"${chappie[@]}" accounts show work

echo
step "chappie log (the audit trail; it never holds a token)"
"${chappie[@]}" log --limit 10

echo
echo "demo: success — against the emulator at $address chappie checked its setup, signed accounts in, got and refreshed a token, polled usage and switched to the best account, reported usage as CSV, imported a Codex login, switched Codex to it, and rotated its key."
