#!/usr/bin/env bash
# make fuzz: every decoder of outside input under libFuzzer and AddressSanitizer, each for a bounded
# time (FUZZ_SECONDS, default 60), starting from the real-shaped fixtures. A crash leaves its input
# in .build/fuzz/crashes/TARGET/ and fails the run; make it a test in
# Tests/ChappieServiceTests/DecoderPropertyTests.swift ("Inputs that broke a decoder stay fixed").
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${FUZZ_SECONDS:-60}"
targets="${FUZZ_TARGETS:-jwt-claims auth-json usage-reply codex-rollout rate-limit-headers token-reply device-code-reply sse websocket-frames backup-file socket-request http-request issuer-keys accounts-check reset-credits command-line profile front-reader}"
scratch=.build/fuzz

echo "==> Building chappie-fuzz (libFuzzer + AddressSanitizer, in $scratch)"
CHAPPIE_FUZZ=1 swift build --scratch-path "$scratch" --sanitize fuzzer --sanitize address --product chappie-fuzz
binary="$(CHAPPIE_FUZZ=1 swift build --scratch-path "$scratch" --sanitize fuzzer --sanitize address --show-bin-path)/chappie-fuzz"

seeds() {
  local fixtures=Tests/Fixtures/openai
  case "$1" in
    jwt-claims) python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); [print(d[k]) for k in ("id_token","access_token")]' "$fixtures/token-response.json" | split -l 1 - "$2/jwt-" ;;
    auth-json) cp "$fixtures"/codex-auth*.json "$2/" ;;
    usage-reply) cp "$fixtures"/wham-usage-*.json "$2/" ;;
    codex-rollout) cp Tests/Fixtures/codex/rollout-*.jsonl "$2/" ;;
    rate-limit-headers) cp "$fixtures"/responses-headers.txt "$fixtures"/usage-*-429.json "$2/" ;;
    token-reply) cp "$fixtures"/token-*.json "$fixtures"/refresh-*.json "$2/" ;;
    device-code-reply) cp "$fixtures"/device-*.json "$2/" ;;
    sse|websocket-frames) cp "$fixtures"/responses-*.sse "$2/" ;;
    backup-file) printf 'chappie-backup 1\n{"format":"chappie-backup","kdf":{"algorithm":"argon2id13","memLimit":67108864,"opsLimit":2,"salt":"AAAAAAAAAAAAAAAAAAAAAA=="},"version":1}\nsealed' > "$2/header" ;;
    socket-request) printf '{"command":"token","account":"work","marginSeconds":300}' > "$2/token" ;;
    issuer-keys) python3 -c 'import json,sys; print("{\"keys\":[{\"kty\":\"RSA\",\"kid\":\"fixture\",\"n\":\"sXch\",\"e\":\"AQAB\"}]}"); print(json.load(open(sys.argv[1]))["id_token"])' "$fixtures/token-response.json" > "$2/set" ;;
    accounts-check) cp "$fixtures"/wham-accounts-check*.json "$2/" ;;
    reset-credits) cp "$fixtures"/wham-reset-credits*.json "$2/" ;;
    profile) cp "$fixtures"/wham-profiles-me.json "$2/" ;;
    front-reader) cp "$fixtures"/codex-auth.json "$2/"; python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["access_token"], end="")' "$fixtures/token-response.json" > "$2/access"
      printf '%s' '{"ok":true,"accounts":[{"id":1,"uuid":"0b5e6b8e-2f0c-4d7e-9a53-6f1c2d3e4f50","name":"work","info":{"plan":"pro","isFedRAMPAccount":false},"status":"ok","createdAt":1,"updatedAt":1,"isActive":true,"maxLeases":1}],"usage":[1,{"accountID":1,"observedAt":1,"source":"poll","limitID":"codex","snapshot":{"limitID":"codex","shortWindow":{"usedPercent":42.4,"windowMinutes":300,"resetsAt":1790003600},"limitReached":false}}]}' > "$2/usage" ;;
    command-line) printf '%s' "sh job.sh 'resume' \"{session}\" go\\ on" > "$2/resume" ;;
    http-request) printf 'GET /metrics HTTP/1.1\r\nHost: localhost:9464\r\nAuthorization: Bearer x\r\n\r\n' > "$2/get" ;;
  esac
}

failed=()
for target in $targets; do
  corpus="$scratch/corpus/$target" crashes="$scratch/crashes/$target"
  mkdir -p "$corpus" "$crashes"
  [ -n "$(ls -A "$corpus")" ] || seeds "$target" "$corpus"
  echo "==> $target for ${seconds} s"
  # Swift's backtracer makes AddressSanitizer report a crash of its own: off while fuzzing. Leak
  # detection is off too: Foundation keeps caches for the process's life (DateFormatter's
  # character sets), which LeakSanitizer reports as leaks at the first input that fills them.
  if ! CHAPPIE_FUZZ_TARGET="$target" SWIFT_BACKTRACE=enable=no "$binary" "$corpus" \
      -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$crashes/" -max_len=65536 -rss_limit_mb=4096 -detect_leaks=0 \
      2> "$scratch/$target.log"; then
    failed+=("$target")
    tail -n 40 "$scratch/$target.log"
  fi
  grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb' "$scratch/$target.log" | sed "s/^/    $target /"
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "==> Crashes in: ${failed[*]} (inputs in $scratch/crashes/)" >&2
  exit 1
fi
echo "==> No crash in: $targets"
