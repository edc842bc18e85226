#!/usr/bin/env bash
# The chappie lifecycle against a local emulator, driven through the real binaries as a user would.
# Run from the repository root (make demo does).
# Starts chappie-emulator on an ephemeral loopback port and always stops it, even on failure.
set -euo pipefail

bin=${CHAPPIE_BIN:-$(swift build --show-bin-path)}
work=$(mktemp -d -t chappie-demo.XXXXXX)
chmod 700 "$work"
. scripts/emulator-lib.sh
install_cleanup demo

step() {
  echo
  echo "==> $*"
}

step "Starting chappie-emulator on an ephemeral loopback port"
start_emulator emulator --auto-approve --auto-approve-delay 1
address=$emulator_address
echo "    emulator at $address"

export CHAPPIE_HOME="$work/home"
# The demo's own Codex home: a switch with none configured writes $CODEX_HOME (never your ~/.codex here).
export CODEX_HOME="$work/codex"
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

step "chappie accounts add team, then spare (three accounts in all)"
"${chappie[@]}" accounts add team "${service[@]}" 2> /dev/null
"${chappie[@]}" accounts add spare "${service[@]}" 2> /dev/null


step "Some use at the emulator (personal 72 %, spare's week 80 %), then chappie usage (polls all three)"
set_emulator_usage personal '{"five_hour_used_percent":72,"weekly_used_percent":30}'
set_emulator_usage spare '{"five_hour_used_percent":10,"weekly_used_percent":80}'
"${chappie[@]}" usage "${service[@]}"

step "chappie accounts list (usage, headroom and its binding window)"
"${chappie[@]}" accounts list

step "chappie accounts switch personal; alerts to a webhook (the emulator's, on loopback); then chappie daemon --auto-switch (polls every 2 s)"
"${chappie[@]}" accounts switch personal
"${chappie[@]}" config set alert-webhook "$address/_emulator/webhooks"
"${chappie[@]}" daemon --poll-interval 2s --auto-switch --codex-home "$work/codex" "${service[@]}" > "$work/daemon.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 100); do [ -S "$CHAPPIE_HOME/chappie.sock" ] && break; sleep 0.1; done
"${chappie[@]}" status

step "personal reaches its 5-hour limit; the daemon switches to the account with the most headroom"
set_emulator_usage personal '{"five_hour_used_percent":100}'
for _ in $(seq 60); do
  [ "$("${chappie[@]}" accounts current)" != "personal" ] && break
  sleep 0.25
done
echo "Active account now: $("${chappie[@]}" accounts current)"
"${chappie[@]}" log --limit 3
grep -m1 'switched account' "$work/daemon.log" || true

step "chappie prompt (one line for a shell prompt, from the daemon's readings)"
"${chappie[@]}" prompt

step "The alerts the webhook received (threshold, switched), one JSON body each"
for _ in $(seq 40); do
  curl -sf "$address/_emulator/webhooks" | grep -q '"switched' && break
  sleep 0.25
done
curl -sf "$address/_emulator/webhooks" | grep -q '"switched' || { echo "demo: the webhook received no switched alert" >&2; exit 1; }
curl -sf "$address/_emulator/webhooks" | python3 -c 'import json, sys; [print(body) for body in json.load(sys.stdin)]'

step "chappie token through the daemon's socket (cut short)"
token=$("${chappie[@]}" token "${service[@]}")
echo "${token:0:16}… (${#token} characters)"

step "chappie usage report --by day (CSV), written to a file"
"${chappie[@]}" usage report --by day --tz UTC --output "$work/usage.csv"
cat "$work/usage.csv"

step "Stopping the daemon (SIGTERM)"
kill -TERM "$daemon_pid"
wait "$daemon_pid" || true
daemon_pid=""
tail -n 2 "$work/daemon.log"

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
echo "demo: success — against the emulator at $address chappie checked its setup, signed three accounts in, refreshed a token, polled usage, ran the daemon, which switched away from an account at its limit and said so to a webhook, reported usage as CSV, imported a Codex login, switched Codex to it, and rotated its key."
