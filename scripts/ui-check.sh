#!/usr/bin/env bash
# make ui-check: renders what chappie shows in a browser with Debian's chromium, headless, and saves
# screenshots under .build/ui/ for a person to look at. Not part of make test.
# The HTML usage report, and the daemon's dashboard on its --metrics-listen listener.
# Starts chappie-emulator on an ephemeral loopback port and always stops it, even on failure.
set -euo pipefail

bin=$(swift build --show-bin-path)
work=$(mktemp -d -t chappie-ui.XXXXXX)
chmod 700 "$work"
. scripts/emulator-lib.sh
install_cleanup ui-check
out=.build/ui
mkdir -p "$out"

browser=$(command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || { echo "chromium is not installed (make ui-check installs Debian's chromium)" >&2; exit 1; }

start_emulator emulator --auto-approve --auto-approve-delay 0
address=$emulator_address
export CHAPPIE_HOME="$work/home"
chappie=("$bin/chappie")
service=(--issuer "$address" --backend "$address/backend-api")

for name in personal team spare; do "${chappie[@]}" accounts add "$name" "${service[@]}" > /dev/null 2>&1; done
account_id() {
  "${chappie[@]}" accounts show "$1" --json | sed -n 's/.*"chatgptAccountID" : "\(.*\)".*/\1/p'
}
set_usage() {
  curl -s -X POST -d "$2" "$address/_emulator/accounts/$(account_id "$1")/usage" > /dev/null
}

echo "==> A history: 12 rounds of use at the emulator, polled each time"
for round in $(seq 0 11); do
  set_usage personal "{\"five_hour_used_percent\":$(( (round * 9) % 100 )),\"weekly_used_percent\":$(( 20 + round * 3 ))}"
  set_usage team "{\"five_hour_used_percent\":$(( round * round % 60 )),\"weekly_used_percent\":$(( 50 + round ))}"
  set_usage spare "{\"five_hour_used_percent\":$(( 5 + round )),\"weekly_used_percent\":80}"
  "${chappie[@]}" usage poll --all "${service[@]}" > /dev/null
  sleep 0.3
done

echo "==> The HTML report, and a screenshot of it"
"${chappie[@]}" usage report --format html -o "$out/report.html" "${service[@]}"
"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1200,1500 \
  --screenshot="$PWD/$out/report.png" "file://$PWD/$out/report.html" > "$work/chromium.log" 2>&1 \
  || { cat "$work/chromium.log" >&2; exit 1; }
"${chappie[@]}" usage history personal --chart "${service[@]}" > "$out/history-chart.txt"

echo "==> The daemon's dashboard, and a screenshot of it"
"${chappie[@]}" daemon --metrics-listen 127.0.0.1:0 --poll-interval 1h --log-format json "${service[@]}" > "$work/daemon.log" 2>&1 &
daemon_pid=$!
dashboard=""
for _ in $(seq 100); do
  # The JSON log line that says where it listens: "address":"127.0.0.1:PORT".
  dashboard=$( (grep 'serving /metrics' "$work/daemon.log" || true) | grep -o '"address" *: *"[^"]*"' | head -1 | sed 's/.*"\([^"]*\)"$/\1/' || true)
  if [ -n "$dashboard" ]; then break; fi
  sleep 0.1
done
[ -n "$dashboard" ] || { cat "$work/daemon.log" >&2; echo "the daemon did not say where its dashboard is" >&2; exit 1; }
curl -s "http://$dashboard/" > "$out/dashboard.html"
"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1200,1500 \
  --screenshot="$PWD/$out/dashboard.png" "http://$dashboard/" > "$work/chromium.log" 2>&1 \
  || { cat "$work/chromium.log" >&2; exit 1; }

echo
echo "ui-check: wrote $out/report.html, $out/report.png, $out/dashboard.html, $out/dashboard.png and $out/history-chart.txt; look at them."
