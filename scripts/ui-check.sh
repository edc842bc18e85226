#!/usr/bin/env bash
# make ui-check: renders what chappie shows in a browser with Debian's chromium, headless, and saves
# screenshots under .build/ui/ for a person to look at. Not part of make test.
# The HTML usage report over a made-up week of readings, the daemon's dashboard on its --http
# listener (an account full, one near its limit, each reading's age), that the dashboard's script
# takes up a newer reading without a reload, and the dashboard of a daemon whose polls fail (each
# account's reason, and the warning that it has not polled for over twice its interval).
# Starts chappie-emulator on an ephemeral loopback port and always stops it, even on failure.
set -euo pipefail

bin=${CHAPPIE_BIN:-$(swift build --show-bin-path)}
work=$(mktemp -d -t chappie-ui.XXXXXX)
chmod 700 "$work"
. scripts/emulator-lib.sh
install_cleanup ui-check
out=.build/ui
mkdir -p "$out"

browser=$(command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || { echo "chromium is not installed (make ui-check installs Debian's chromium)" >&2; exit 1; }
# screenshot FILE URL: a 1200×1500 headless screenshot, at most 2 minutes.
screenshot() {
  timeout 120 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1200,1500 \
    --screenshot="$PWD/$1" "$2" > "$work/chromium.log" 2>&1 \
    || { cat "$work/chromium.log" >&2; echo "chromium could not take $1" >&2; exit 1; }
}

start_emulator emulator --auto-approve --auto-approve-delay 0
address=$emulator_address
export CHAPPIE_HOME="$work/home"
chappie=("$bin/chappie")
service=(--issuer "$address" --backend "$address/backend-api")

for name in personal team spare; do "${chappie[@]}" accounts add "$name" "${service[@]}" > /dev/null 2>&1; done

echo "==> A week of history: a reading every 20 minutes per account, written straight into the store"
# Only the credentials are sealed; usage_samples is plain SQLite, so a week can be made up here
# instead of waited for. The accounts are polled first, so that the made-up windows line up with
# the emulator's: its windows began when the accounts were made, a moment ago, so the made-up ones
# end then (every chart shows a reset at its right edge). Each 5-hour window climbs to its own peak,
# each week grows at its own rate.
# personal's week is used up (marked full), team's 5-hour window is at 88 % (near its limit).
set_emulator_usage personal '{"five_hour_used_percent":35,"weekly_used_percent":100}'
set_emulator_usage team '{"five_hour_used_percent":88,"weekly_used_percent":2}'
set_emulator_usage spare '{"five_hour_used_percent":4,"weekly_used_percent":6}'
"${chappie[@]}" usage poll --all "${service[@]}" > /dev/null
db="$CHAPPIE_HOME/chappie.sqlite"
now=$(date +%s)
sqlite3 -batch -separator ' ' "$db" \
  "SELECT account_id, five_hour_resets_at, weekly_resets_at FROM usage_samples WHERE limit_id = 'codex' ORDER BY account_id;" \
  | awk -v now="$now" '
  BEGIN { print "BEGIN;" }
  {
    id = $1; end5 = $2; endWeek = $3; rate = 4 + id * 3
    for (t = now - 7 * 86400; t < now - 1200; t += 1200) {
      k = int((end5 - t - 1) / 18000); closes = end5 - k * 18000; opened = closes - 18000
      peak = 30 + ((k * 37 + id * 11) % 70)
      kw = int((endWeek - t - 1) / 604800); weekCloses = endWeek - kw * 604800
      week = (t - (weekCloses - 604800)) / 86400 * rate; if (week > 100) week = 100
      printf "INSERT INTO usage_samples (account_id, observed_at, source, limit_id, plan, five_hour_used_percent, five_hour_window_minutes, five_hour_resets_at, weekly_used_percent, weekly_window_minutes, weekly_resets_at) VALUES (%d, %d, \047poll\047, \047codex\047, \047plus\047, %.1f, 300, %d, %.1f, 10080, %d);\n", id, t, peak * (t - opened) / 18000, closes, week, weekCloses
    }
  }
  END { print "COMMIT;" }' | sqlite3 -batch "$db"
# team is the active account and owns a Codex home, so both marks show.
"${chappie[@]}" accounts switch team --codex-home "$work/codex" "${service[@]}" > /dev/null

echo "==> The HTML report, and a screenshot of it"
"${chappie[@]}" usage report --format html --since 7d --output "$out/report.html" "${service[@]}"
screenshot "$out/report.png" "file://$PWD/$out/report.html"
"${chappie[@]}" usage history personal --chart "${service[@]}" > "$out/history-chart.txt"

echo "==> The daemon's dashboard, and a screenshot of it"
"${chappie[@]}" daemon --http 127.0.0.1:0 --poll-interval 1h --log-format json "${service[@]}" > "$work/daemon.log" 2>&1 &
daemon_pid=$!
dashboard=""
for _ in $(seq 100); do
  # chappie status says where the dashboard is once the daemon listens: "Dashboard: http://ADDRESS/".
  dashboard=$("${chappie[@]}" status "${service[@]}" 2> /dev/null | sed -n 's|^Dashboard: http://\(.*\)/$|\1|p' || true)
  if [ -n "$dashboard" ]; then break; fi
  sleep 0.1
done
[ -n "$dashboard" ] || { cat "$work/daemon.log" >&2; echo "the daemon did not say where its dashboard is" >&2; exit 1; }
curl -s "http://$dashboard/" > "$out/dashboard.html"
screenshot "$out/dashboard.png" "http://$dashboard/"
echo "==> The dashboard without its script, and a screenshot of it"
# Headless chromium has no switch that turns JavaScript off (--blink-settings=scriptEnabled=false
# makes it write no screenshot), so the page is shown with its one script cut out.
sed '/^<script>/,/<\/script>$/d' "$out/dashboard.html" > "$out/dashboard-no-js.html"
! grep -q '<script' "$out/dashboard-no-js.html" || { echo "the script was not cut out" >&2; exit 1; }
screenshot "$out/dashboard-no-js.png" "file://$PWD/$out/dashboard-no-js.html"

echo "==> The dashboard's script in the browser: an old page takes up a newer reading without a reload"
# A small proxy answers the first GET / with the page as it was (under the daemon's headers, its
# Content-Security-Policy included), then passes everything to the daemon. Meanwhile a poll stores a newer reading of "spare". Chromium runs the page on virtual
# time past the script's first 30 s tick; the DOM it ends with must show the new reading.
old_revision=$(grep -o 'data-account="spare" data-revision="[^"]*"' "$out/dashboard.html" || true)
[ -n "$old_revision" ] || { echo "the dashboard has no section for spare: see $out/dashboard.html" >&2; exit 1; }
set_emulator_usage spare '{"five_hour_used_percent":77,"weekly_used_percent":7}'
"${chappie[@]}" usage poll spare "${service[@]}" > /dev/null
new_revision=$(curl -s "http://$dashboard/" | grep -o 'data-account="spare" data-revision="[^"]*"' || true)
[ "$old_revision" != "$new_revision" ] || { echo "the poll did not change spare's revision" >&2; exit 1; }
timeout 150 python3 - "$dashboard" "$out/dashboard.html" > "$work/proxy.log" 2>&1 <<'PY' &
import http.server, sys, urllib.request
upstream, first_page = sys.argv[1], open(sys.argv[2], "rb").read()
served = []
class Proxy(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with urllib.request.urlopen("http://" + upstream + self.path, timeout=20) as answer:
            body, headers = answer.read(), answer.headers
        if self.path == "/" and not served:
            served.append(1)
            body = first_page
        self.send_response(200)
        for name in ("Content-Type", "Content-Security-Policy", "X-Content-Type-Options"):
            if headers[name]:
                self.send_header(name, headers[name])
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
server = http.server.HTTPServer(("127.0.0.1", 0), Proxy)
print(server.server_address[1], flush=True)
server.timeout = 60
for _ in range(20):
    server.handle_request()
PY
proxy_pid=$!
other_pids+=("$proxy_pid")
proxy_port=""
for _ in $(seq 100); do proxy_port=$(head -1 "$work/proxy.log" 2>/dev/null || true); [ -n "$proxy_port" ] && break; sleep 0.1; done
[[ "$proxy_port" =~ ^[0-9]+$ ]] || { cat "$work/proxy.log" >&2; echo "the proxy did not start" >&2; exit 1; }
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --virtual-time-budget=40000 --dump-dom \
  "http://127.0.0.1:$proxy_port/" > "$out/dashboard-after-refresh.html" 2> "$work/chromium.log" \
  || { cat "$work/chromium.log" >&2; exit 1; }
kill "$proxy_pid" 2>/dev/null || true
if grep -q "$new_revision" "$out/dashboard-after-refresh.html" && ! grep -q "$old_revision" "$out/dashboard-after-refresh.html" \
  && grep -q '>77</span> %' "$out/dashboard-after-refresh.html"; then
  echo "    the page took up spare's newer reading and its charts without a reload"
else
  echo "the dashboard's script did not take up the newer reading: see $out/dashboard-after-refresh.html" >&2
  exit 1
fi

echo "==> A daemon whose polls fail: each account's reason, and the warning that it has not polled"
stop_process "$daemon_pid" 50
daemon_pid=""
curl -s -X POST -H 'Content-Type: application/json' \
  -d '{"kind":"status","status":503,"count":100000,"path":"/backend-api/wham/usage"}' "$address/_emulator/faults" > /dev/null
"${chappie[@]}" daemon --http 127.0.0.1:0 --poll-interval 2s --log-format json "${service[@]}" > "$work/daemon-failing.log" 2>&1 &
daemon_pid=$!
failing=""
for _ in $(seq 300); do
  failing=$("${chappie[@]}" status "${service[@]}" 2> /dev/null | sed -n 's|^Dashboard: http://\(.*\)/$|\1|p' || true)
  if [ -n "$failing" ] && curl -s "http://$failing/" | grep -q 'class="daemon stale"'; then break; fi
  sleep 0.1
done
curl -s "http://$failing/" > "$out/dashboard-failing.html"
grep -q 'class="daemon stale"' "$out/dashboard-failing.html" && grep -q 'Last poll or refresh failed: usage poll failed' "$out/dashboard-failing.html" \
  || { cat "$work/daemon-failing.log" >&2; echo "the failing daemon's dashboard does not say so: see $out/dashboard-failing.html" >&2; exit 1; }
screenshot "$out/dashboard-failing.png" "http://$failing/"

echo
echo "ui-check: wrote $out/report.html, $out/report.png, $out/dashboard.html, $out/dashboard.png,"
echo "          $out/dashboard-no-js.png, $out/dashboard-after-refresh.html, $out/dashboard-failing.png and $out/history-chart.txt; look at them."
