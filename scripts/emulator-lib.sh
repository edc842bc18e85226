# Shared by demo.sh and interop.sh: starting chappie-emulator on an ephemeral loopback port, and a
# cleanup that always stops the daemon and the emulators and removes the scratch directory. Needs
# $bin (chappie's binaries) and $work (a private scratch directory).

emulator_pids=()
daemon_pid=""
# Other processes a script started, stopped by the cleanup too.
other_pids=()
started=$SECONDS

# stop_process PID TENTHS: SIGTERM, up to TENTHS tenths of a second, then SIGKILL.
stop_process() {
  local pid=$1 tries=$2
  if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then return 0; fi
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq "$tries"); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
}

# start_emulator NAME [OPTIONS…]: starts it on 127.0.0.1 with an ephemeral port and sets
# emulator_address; its output goes to $work/NAME.{out,err}.
start_emulator() {
  local name=$1
  shift
  # The files exist before the emulator starts: the background job opens them in its own time, and
  # reading one not yet there would stop this script (set -e).
  : > "$work/$name.out"
  : > "$work/$name.err"
  "$bin/chappie-emulator" --host 127.0.0.1 --port 0 "$@" > "$work/$name.out" 2> "$work/$name.err" &
  local pid=$!
  emulator_pids+=("$pid")
  emulator_address=""
  for _ in $(seq 100); do
    emulator_address=$(sed -n '1s/^listening on //p' "$work/$name.out")
    [ -n "$emulator_address" ] && break
    kill -0 "$pid" 2>/dev/null || { cat "$work/$name.err" >&2; echo "the emulator exited" >&2; exit 1; }
    sleep 0.1
  done
  [ -n "$emulator_address" ] || { echo "the emulator did not start within 10 seconds" >&2; exit 1; }
  case "$emulator_address" in
    http://127.0.0.1:* | https://127.0.0.1:*) ;;
    *) echo "the emulator is not on loopback: $emulator_address" >&2; exit 1 ;;
  esac
}

# install_cleanup NAME: on exit (also on failure, Ctrl-C or SIGTERM) stops the daemon, the
# emulators and other_pids, removes $work, and on failure says so with the exit status and the time taken.
install_cleanup() {
  cleanup_name=$1
  trap cleanup EXIT
  trap 'exit 130' INT TERM
}

cleanup() {
  status=$?
  stop_process "$daemon_pid" 50
  for pid in "${emulator_pids[@]}" "${other_pids[@]}"; do stop_process "$pid" 50; done
  rm -rf "$work"
  if [ $status -ne 0 ]; then
    echo "$cleanup_name: FAILED (exit $status) after $((SECONDS - started)) s; see the output above." >&2
  fi
  exit $status
}

# emulator_account_id NAME: the ChatGPT account id of chappie's account NAME (needs $chappie).
emulator_account_id() {
  "${chappie[@]}" accounts show "$1" --json | sed -n 's/.*"chatgptAccountID" : "\(.*\)".*/\1/p'
}

# set_emulator_usage NAME JSON: sets what the emulator reports as account NAME's use (needs
# $chappie and $emulator_address).
set_emulator_usage() {
  curl -s -X POST -d "$2" "$emulator_address/_emulator/accounts/$(emulator_account_id "$1")/usage" > /dev/null
}
