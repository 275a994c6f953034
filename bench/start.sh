#!/usr/bin/env bash
# Times `batchhook serve` from exec to the first 200 from /readyz on an
# existing data directory (FETCH_WORKERS=0, LOG_LEVEL=info), RUNS times
# (default 3), stopping it with SIGTERM after each; prints the seconds of
# each run and the events each start logged (index_backfilled says a
# one-time walk over every record ran). The first run after the file was
# written or copied reads it from disk; later runs find it in the page
# cache. Only the processes started here are stopped.
#   bash bench/start.sh DATA_DIR [RUNS]
# Needs curl.
set -euo pipefail
cd "$(dirname "$0")/.."
data=${1:?usage: bench/start.sh DATA_DIR [RUNS]}
runs=${2:-3}
case $runs in *[!0-9]*) echo "start: RUNS must be a number" >&2; exit 2 ;; esac
[ -f "$data/batchhook.db" ] || { echo "start: no batchhook.db in $data" >&2; exit 2; }
. bench/lib.sh
need start curl
go build -o "$work/batchhook" ./cmd/batchhook
(umask 077 && printf 'bench-secret' > "$work/secret")
for run in $(seq "$runs"); do
  listen=$(port) admin=$(port)
  while [ "$admin" = "$listen" ]; do admin=$(port); done
  t0=$(date +%s.%N)
  BATCHHOOK_LISTEN_ADDR=127.0.0.1:$listen BATCHHOOK_ADMIN_ADDR=127.0.0.1:$admin \
  BATCHHOOK_SIGNING_SECRET_FILE="$work/secret" BATCHHOOK_API_KEY=unused BATCHHOOK_API_BASE_URL=http://127.0.0.1:1 \
  BATCHHOOK_DATA_DIR="$data" BATCHHOOK_EXPORT_DIR="$work/exports" BATCHHOOK_FETCH_WORKERS=0 BATCHHOOK_LOG_LEVEL=info \
    "$work/batchhook" serve > "$work/serve.log" 2>&1 &
  pid=$!
  pids=("$pid")
  until curl -sf -o /dev/null "http://127.0.0.1:$admin/readyz"; do
    kill -0 "$pid" 2>/dev/null || { cat "$work/serve.log" >&2; exit 1; }
    sleep 0.005
  done
  t1=$(date +%s.%N)
  kill "$pid"; wait "$pid" || true
  pids=()
  events=$(grep -o '"event":"[a-z_]*"' "$work/serve.log" | cut -d'"' -f4 | tr '\n' ' ')
  echo "run $run: ready after $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}') s (events: $events)"
done
