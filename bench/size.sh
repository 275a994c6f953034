#!/usr/bin/env bash
# Records N unique batches in a fresh `batchhook serve` (FETCH_WORKERS=0,
# LOG_LEVEL=warn) with wrk and bench/wrk.lua (requests signed beforehand
# by bench/presign.sh, perl's Digest::SHA), then prints what they cost:
# batchhook.db's bytes per batch and the daemon's resident memory (VmRSS,
# and its anonymous and file-backed parts from /proc/<pid>/status), right
# after the load and again after the daemon's next release of its mapped
# database pages (every 10 s; README, Performance).
#   bash bench/size.sh [N (default 100000)] [concurrency (default 64)]
# Needs wrk and perl; only the process started here is stopped.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-100000}
c=${2:-64}
case $n$c in *[!0-9]*) echo "size: N and concurrency must be numbers" >&2; exit 2 ;; esac
. bench/lib.sh
need size wrk perl curl
go build -o "$work/batchhook" ./cmd/batchhook
printf 'bench-secret' > "$work/secret"
listen=$(port) admin=$(port)
while [ "$admin" = "$listen" ]; do admin=$(port); done
BATCHHOOK_LISTEN_ADDR=127.0.0.1:$listen BATCHHOOK_ADMIN_ADDR=127.0.0.1:$admin \
BATCHHOOK_SIGNING_SECRET_FILE="$work/secret" BATCHHOOK_API_KEY=unused BATCHHOOK_API_BASE_URL=http://127.0.0.1:1 \
BATCHHOOK_DATA_DIR="$work/data" BATCHHOOK_FETCH_WORKERS=0 BATCHHOOK_LOG_LEVEL=warn "$work/batchhook" serve > "$work/serve.log" 2>&1 &
pid=$!
pids+=("$pid")
for _ in $(seq 100); do
  if curl -sf "http://127.0.0.1:$admin/healthz" > /dev/null; then break; fi
  kill -0 "$pid" 2>/dev/null || { cat "$work/serve.log" >&2; exit 1; }
  sleep 0.1
done
bash bench/presign.sh "$work/secret" "$n" > "$work/requests.tsv"
accepted() { curl -sf "http://127.0.0.1:$admin/metrics" | awk '$1 == "batchhook_webhook_requests_total{outcome=\"accepted\"}" {print $2 + 0}'; }
rss() { awk '/^(VmRSS|RssAnon|RssFile):/ {printf "%s%s %.1f MiB", (k++ ? ", " : ""), $1, $2 / 1024}' "/proc/$pid/status"; }
t0=$(date +%s.%N)
# Chunks of 10,000 ids, each wrk thread its slice once (prefill mode; wrk
# still waits out -d, so a chunk is sent again until all of it is recorded:
# the repeats are answered duplicate and record nothing).
chunk=10000
for ((start = 0; start < n; start += chunk)); do
  count=$((n - start < chunk ? n - start : chunk))
  want=$(( $(accepted) + count / 2 * 2 ))
  for _ in 1 2 3 4 5; do
    wrk -t 2 -c "$c" -d 2s -s bench/wrk.lua "http://127.0.0.1:$listen/webhooks/batch-completed" -- "$work/requests.tsv" "$start" "$count" 2 prefill > /dev/null
    if [ "$(accepted)" -ge "$want" ]; then break; fi
  done
done
t1=$(date +%s.%N)
got=$(accepted)
db=$(stat -c %s "$work/data/batchhook.db")
echo "batches recorded: $got of $n in $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}') s (c=$c)"
echo "batchhook.db: $db bytes, $((db / got)) bytes a batch"
echo "RSS right after the load: $(rss)"
sleep 11
echo "RSS 11 s later (after a release of the mapped pages): $(rss)"
