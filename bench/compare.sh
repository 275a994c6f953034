#!/usr/bin/env bash
# Loads the bare baseline and the real daemon with the same requests from the
# same generator, on loopback, and prints one line per run.
#   bash bench/compare.sh [seconds per run]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-5}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
go build -o "$work/batchhook" ./cmd/batchhook
printf 'bench-secret' > "$work/secret"
bh="$work/batchhook"

run() { # label url pid c extra...
  local label=$1 url=$2 pid=$3 c=$4; shift 4
  printf '%-8s c=%-4s ' "$label" "$c"
  "$bh" bench --secret-file "$work/secret" --url "$url" -c "$c" --duration "${secs}s" --server-pid "$pid" "$@" | sed -n 1p
}

"$bh" bench --bare 127.0.0.1:18181 --secret-file "$work/secret" > "$work/bare.log" &
bare=$!
BATCHHOOK_LISTEN_ADDR=127.0.0.1:18182 BATCHHOOK_ADMIN_ADDR=127.0.0.1:0 BATCHHOOK_SIGNING_SECRET_FILE="$work/secret" \
BATCHHOOK_API_KEY=unused BATCHHOOK_API_BASE_URL=http://127.0.0.1:1 BATCHHOOK_DATA_DIR="$work/data" \
BATCHHOOK_FETCH_WORKERS=0 BATCHHOOK_LOG_LEVEL=warn "$bh" serve > "$work/serve.log" &
daemon=$!
sleep 1
for c in 1 16 64 256; do
  run bare "http://127.0.0.1:18181/webhooks/batch-completed" $bare $c
  run daemon "http://127.0.0.1:18182/webhooks/batch-completed" $daemon $c
done
run bare-forged "http://127.0.0.1:18181/webhooks/batch-completed" $bare 64 --invalid 1
run daemon-replays "http://127.0.0.1:18182/webhooks/batch-completed" $daemon 64 --replay 1
run daemon-forged "http://127.0.0.1:18182/webhooks/batch-completed" $daemon 64 --invalid 1
echo "database: $(du -h "$work/data/batchhook.db" | cut -f1), daemon RSS: $(grep VmRSS /proc/$daemon/status | awk '{print $2/1024 " MiB"}')"
