#!/usr/bin/env bash
# Loads the bare baseline (`batchhook bench --bare`: echo, the body cap, the
# signature check, a 200, no storage) and the real daemon (`batchhook serve`,
# FETCH_WORKERS=0, LOG_LEVEL=warn) with the same requests, on loopback, and
# prints a table: the median of 3 interleaved runs per row (bare, daemon,
# bare, daemon, ...).
#   bash bench/compare.sh [seconds per run] [wrk threads]
#   BENCH_GENERATOR=builtin bash bench/compare.sh   (the built-in generator even with wrk)
#   BENCH_IDS=ordered bash bench/compare.sh   (batch ids in order instead of random; bench/presign.sh)
#
# With `wrk` on PATH (and perl, for bench/presign.sh) the load comes from wrk
# and bench/wrk.lua: every request a different body, signed beforehand by an
# HMAC that is not batchhook's. Otherwise it falls back to the built-in
# generator (`batchhook bench`), which shares the CPU with the server and in
# Go costs more per request than wrk: its ratios flatter the daemon. The first
# line says which was used.
#
# Server CPU is utime+stime from /proc/<pid>/stat over the run, divided by the
# requests answered. The daemon's outcomes (accepted / duplicate /
# unauthorized) are read from its /metrics before and after each run, so a
# row says what it measured. Only the processes started here are stopped.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-4}
threads=${2:-2}
reps=3
. bench/lib.sh

# waitport port pid log: waits (10 s at most) until 127.0.0.1:port accepts
# while our process pid still runs (a port taken meanwhile by someone else
# makes ours exit: then its log is shown, and nothing else is loaded).
waitport() {
  for _ in $(seq 100); do
    if ! kill -0 "$2" 2>/dev/null; then
      echo "compare: the server for port $1 exited:" >&2
      cat "$3" >&2
      return 1
    fi
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
      sleep 0.2
      if kill -0 "$2" 2>/dev/null; then return 0; fi
    fi
    sleep 0.1
  done
  echo "compare: nothing listens on 127.0.0.1:$1 after 10 s" >&2
  return 1
}
cputicks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
outcome() { # admin-port outcome: the daemon's counter for it
  curl -sf "http://127.0.0.1:$1/metrics" | awk -v o="$2" '$1 == "batchhook_webhook_requests_total{outcome=\"" o "\"}" {print $2 + 0; f = 1} END {if (!f) print 0}'
}

go build -o "$work/batchhook" ./cmd/batchhook
printf 'bench-secret' > "$work/secret"
bh="$work/batchhook"
hz=$(getconf CLK_TCK)
path=/webhooks/batch-completed
bare_port=$(port)
daemon_port=$(port)
admin_port=$(port)
while [ "$daemon_port" = "$bare_port" ]; do daemon_port=$(port); done
while [ "$admin_port" = "$bare_port" ] || [ "$admin_port" = "$daemon_port" ]; do admin_port=$(port); done

"$bh" bench --bare "127.0.0.1:$bare_port" --secret-file "$work/secret" > "$work/bare.log" 2>&1 &
bare=$!
pids+=("$bare")
BATCHHOOK_LISTEN_ADDR=127.0.0.1:$daemon_port BATCHHOOK_ADMIN_ADDR=127.0.0.1:$admin_port \
BATCHHOOK_SIGNING_SECRET_FILE="$work/secret" BATCHHOOK_API_KEY=unused BATCHHOOK_API_BASE_URL=http://127.0.0.1:1 \
BATCHHOOK_DATA_DIR="$work/data" BATCHHOOK_FETCH_WORKERS=0 BATCHHOOK_LOG_LEVEL=warn "$bh" serve > "$work/serve.log" 2>&1 &
daemon=$!
pids+=("$daemon")
waitport "$bare_port" "$bare" "$work/bare.log"
waitport "$daemon_port" "$daemon" "$work/serve.log"
waitport "$admin_port" "$daemon" "$work/serve.log"

if [ "${BENCH_GENERATOR:-}" = builtin ] || ! command -v wrk > /dev/null || ! perl -MDigest::SHA -e 1 2> /dev/null; then
  why="wrk or perl's Digest::SHA not found"
  if [ "${BENCH_GENERATOR:-}" = builtin ]; then why="BENCH_GENERATOR=builtin"; fi
  echo "generator: batchhook bench (built-in; $why), ${secs} s per run, one run per row"
  run() { # label port pid c extra...
    local label=$1 port=$2 pid=$3 c=$4; shift 4
    printf '%-15s c=%-4s ' "$label" "$c"
    "$bh" bench --secret-file "$work/secret" --url "http://127.0.0.1:$port$path" -c "$c" --duration "${secs}s" --server-pid "$pid" "$@" | sed -n 1p
  }
  for c in 64 256; do
    run bare "$bare_port" "$bare" "$c"
    run daemon "$daemon_port" "$daemon" "$c"
  done
  run daemon-replays "$daemon_port" "$daemon" 64 --replay 1
  run bare-forged "$bare_port" "$bare" 64 --invalid 1
  run daemon-forged "$daemon_port" "$daemon" 64 --invalid 1
  exit 0
fi

# Request file: a prefill region (ids recorded before the replay rows), then
# one region per unique daemon run, each large enough that a run at 25k
# acks/s would not reuse an id (wrapped= says if it did).
region=$((secs * 25000))
prefill=20000
nregions=$((2 * reps))
total=$((prefill + nregions * region))
echo "generator: wrk $(wrk -v 2>&1 | head -1 | awk '{print $2}') with bench/wrk.lua, -t $threads, ${secs} s per run, median of $reps interleaved runs; $total requests pre-signed by bench/presign.sh (perl Digest::SHA), batch ids $([ "${BENCH_IDS:-}" = ordered ] && echo "in order (BENCH_IDS=ordered)" || echo "random like the provider's")"
bash bench/presign.sh "$work/secret" "$total" > "$work/requests.tsv"

# The Lua check: the same load with one fixed body and no per-request Lua.
first=$(head -1 "$work/requests.tsv")
cat > "$work/static.lua" <<EOF
wrk.method = "POST"
wrk.body = [[${first#*$'\t'}]]
wrk.headers["Content-Type"] = "application/json"
wrk.headers["x-service-webhook-signature"] = "${first%%$'\t'*}"
wrk.headers["X-Service-Attempt"] = "1"
EOF

# load label rep server c mode start count: one wrk run; appends a line to
# runs.tsv: label rep server rps p50_ms p99_ms cpu_us non2xx wrapped accepted
# duplicate unauthorized db_bytes_per_batch.
recorded=0
load() {
  local label=$1 rep=$2 server=$3 c=$4 mode=$5 start=$6 count=$7
  local port pid out t0 t1 a0 d0 u0 a1=0 d1=0 u1=0 dbb=-
  if [ "$server" = bare ]; then port=$bare_port pid=$bare; else port=$daemon_port pid=$daemon; fi
  if [ "$server" = daemon ]; then
    a0=$(outcome "$admin_port" accepted) d0=$(outcome "$admin_port" duplicate) u0=$(outcome "$admin_port" unauthorized)
  fi
  t0=$(cputicks "$pid")
  if [ "$mode" = static ]; then
    out=$(wrk -t "$threads" -c "$c" -d "${secs}s" --latency -s "$work/static.lua" "http://127.0.0.1:$port$path")
    t1=$(cputicks "$pid")
    out="RESULT $(awk '/Requests\/sec/ {printf " rps=%s", $2} / requests in / {printf " requests=%s", $1}' <<< "$out") $(awk '/Latency Distribution/ {f = 1} f && $1 == "50%" {printf "p50=%s", $2} f && $1 == "99%" {printf " p99=%s", $2}' <<< "$out")"
  else
    out=$(wrk -t "$threads" -c "$c" -d "${secs}s" --latency -s bench/wrk.lua "http://127.0.0.1:$port$path" -- "$work/requests.tsv" "$start" "$count" "$threads" "$mode" | grep '^RESULT')
    t1=$(cputicks "$pid")
  fi
  if [ "$server" = daemon ]; then
    a1=$(outcome "$admin_port" accepted) d1=$(outcome "$admin_port" duplicate) u1=$(outcome "$admin_port" unauthorized)
    a1=$((a1 - a0)) d1=$((d1 - d0)) u1=$((u1 - u0))
    recorded=$((recorded + a1))
    if [ "$recorded" -gt 0 ]; then dbb=$(( $(stat -c %s "$work/data/batchhook.db") / recorded )); fi
  fi
  awk -v label="$label" -v rep="$rep" -v server="$server" -v ticks=$((t1 - t0)) -v hz="$hz" \
      -v a="$a1" -v d="$d1" -v u="$u1" -v dbb="$dbb" -v secs="$secs" '
    function ms(v) { # wrk text latencies: 1.23ms, 456.00us, 1.02s
      if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
    {
      for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
      if ("duration_us" in f) { rps = f["requests"] / (f["duration_us"] / 1e6); p50 = f["p50_us"] / 1000; p99 = f["p99_us"] / 1000 }
      else { rps = f["rps"]; p50 = ms(f["p50"]); p99 = ms(f["p99"]) }
      cpu = f["requests"] > 0 ? ticks * 1e6 / hz / f["requests"] : 0
      printf "%s\t%s\t%s\t%.0f\t%.2f\t%.2f\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\n", label, rep, server, rps, p50, p99, cpu,
        ("non2xx" in f ? f["non2xx"] : "-"), ("wrapped" in f ? f["wrapped"] : "-"), a, d, u, dbb
    }' <<< "$out" | tee -a "$work/runs.tsv" >&2
}

# The replay rows send ids recorded here first, each thread its slice once
# (wrk still waits out -d; a second pass records what the first had no time for).
for _ in 1 2 3; do
  wrk -t "$threads" -c 64 -d "${secs}s" -s bench/wrk.lua "http://127.0.0.1:$daemon_port$path" -- "$work/requests.tsv" 0 "$prefill" "$threads" prefill > /dev/null
  recorded=$(outcome "$admin_port" accepted)
  if [ "$recorded" -ge "$((prefill / threads * threads))" ]; then break; fi
done
if [ "$recorded" -lt "$((prefill / threads * threads))" ]; then
  echo "compare: the prefill recorded $recorded of $prefill ids: the replay rows would not be pure replays" >&2
  exit 1
fi
echo "label	rep	server	req/s	p50_ms	p99_ms	cpu_us/req	non2xx	wrapped	accepted	duplicate	unauthorized	db_B/batch" >&2
r=0
for rep in $(seq "$reps"); do
  load "bare fixed body (Lua check)" "$rep" bare 64 static 0 0
  for c in 64 256; do
    start=$((prefill + r * region)); r=$((r + 1))
    load "unique ids, c=$c" "$rep" bare "$c" unique "$start" "$region"
    load "unique ids, c=$c" "$rep" daemon "$c" unique "$start" "$region"
  done
  load "replays of known ids, c=64" "$rep" bare 64 replay 0 "$prefill"
  load "replays of known ids, c=64" "$rep" daemon 64 replay 0 "$prefill"
  load "forged signatures, c=64" "$rep" bare 64 forged 0 "$prefill"
  load "forged signatures, c=64" "$rep" daemon 64 forged 0 "$prefill"
done

# The table: per row and server, the run with the median req/s (all its
# figures come from that one run); the ratio is daemon / bare of the medians.
echo
echo "| load | bare req/s | bare p50 / p99 | bare CPU/req | daemon req/s | daemon p50 / p99 | daemon CPU/req | daemon share of bare | daemon p99 / bare p99 | database per batch |"
echo "|---|---|---|---|---|---|---|---|---|---|"
sort -t$'\t' -k1,1 -k3,3 -k4,4n "$work/runs.tsv" | awk -F'\t' -v reps="$reps" -v runs="$work/runs.tsv" '
  function fmt(n) { s = sprintf("%d", n); while (s ~ /[0-9][0-9][0-9][0-9]/) sub(/[0-9][0-9][0-9]$/, ",&", s); return s }
  BEGIN { while ((getline line < runs) > 0) { split(line, x, "\t"); if (!(x[1] in seen)) { seen[x[1]] = 1; order[++m] = x[1] } } }
  { k = $1 SUBSEP $3; n[k]++; if (n[k] == int((reps + 1) / 2)) med[k] = $0 }
  END {
    for (i = 1; i <= m; i++) {
      l = order[i]; split(med[l SUBSEP "bare"], b, "\t")
      if (!((l SUBSEP "daemon") in med)) { printf "| %s | %s | %.2f / %.2f ms | %d µs | | | | | | |\n", l, fmt(b[4]), b[5], b[6], b[7]; continue }
      split(med[l SUBSEP "daemon"], d, "\t")
      printf "| %s | %s | %.2f / %.2f ms | %d µs | %s | %.2f / %.2f ms | %d µs | %.0f %% | %.2f× | %s |\n", l, fmt(b[4]), b[5], b[6], b[7],
        fmt(d[4]), d[5], d[6], d[7], 100 * d[4] / b[4], d[6] / b[6], (d[13] == "-" || l !~ /unique/ ? "" : fmt(d[13]) " B")
    }
  }'
echo
echo "batches recorded: $recorded; batchhook.db: $(stat -c %s "$work/data/batchhook.db") bytes; daemon RSS: $(awk '/^(VmRSS|RssAnon|RssFile):/ {printf "%s%s %.1f MiB", (n++ ? ", " : ""), $1, $2 / 1024}' "/proc/$daemon/status")"
