#!/usr/bin/env bash
# Measures the daemon on an empty database and on a year's (bench/scale
# build), in one run, and prints a markdown table: figure, goal, empty,
# year, met. docs/performance.md ("A year of traffic") describes each
# figure and how it is taken.
#   bash bench/scale/measure.sh YEAR_DIR [BATCHES]
# YEAR_DIR is built (go run ./bench/scale build -dir YEAR_DIR -batches
# BATCHES, default 5300000) unless it already holds data/batchhook.db built
# and never served since (its first purge pass is measured: a served one
# has nothing left due). The run purges it, adds batches to it and
# compacts it: build a new one for the next run.
# MEASURE_TRAFFIC_SECS (300) and MEASURE_TRAFFIC_RATE (2 webhooks a
# second) set the normal traffic; MEASURE_ACK_SECS (20) the wrk runs;
# MEASURE_PERBATCH (200000) the two databases of bytes a batch;
# MEASURE_LOGS=DIR keeps the daemons' logs there.
# Needs wrk, perl (Digest::SHA), curl, jq and python3 (the http sink's
# receiver). Only the processes started here are stopped.
set -euo pipefail
cd "$(dirname "$0")/../.."
year=${1:?usage: bench/scale/measure.sh YEAR_DIR [BATCHES]}
batches=${2:-5300000}
traffic_secs=${MEASURE_TRAFFIC_SECS:-300}
traffic_rate=${MEASURE_TRAFFIC_RATE:-2}
ack_secs=${MEASURE_ACK_SECS:-20}
. bench/lib.sh
need measure wrk perl curl jq python3
bench_on_exit() {
  if [ -n "${MEASURE_LOGS:-}" ]; then mkdir -p "$MEASURE_LOGS" && cp "$work"/*.log "$work"/*.fig "$work"/*.lists "$work"/*.out "$MEASURE_LOGS"/ 2>/dev/null || true; fi
}
say() { echo "measure: $*" >&2; }
now() { date +%s.%N; }
# pct P FILE: the P-th percentile (nearest rank) of the numbers in FILE, in ms.
pct() { sort -g "$2" | awk -v p="$1" '{v[NR] = $1} END {if (!NR) {print "-"; exit}; i = int(NR * p / 100 + 0.999999); if (i < 1) i = 1; printf "%.1f", v[i] * 1000}'; }
rss() { awk '/^(VmRSS|RssAnon|RssFile):/ {v[$1] = $2 / 1024} END {printf "%.1f MiB (anon %.1f, file %.1f)", v["VmRSS:"], v["RssAnon:"], v["RssFile:"]}' "/proc/$1/status"; }
rssmib() { awk '/^VmRSS:/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }

go build -o "$work/" ./cmd/batchhook ./cmd/lookupsim
bh=$work/batchhook
(umask 077 && printf 'bench-secret' > "$work/secret" && printf 'whsec_%s' "$(head -c 32 /dev/urandom | base64)" > "$work/sink-secret")

if [ ! -f "$year/data/batchhook.db" ]; then
  say "building a year: $batches batches in $year"
  go run ./bench/scale build -dir "$year" -batches "$batches" >&2
fi
empty=$work/empty
mkdir -p "$empty/data"

# The requests: pre-signed, unique, random provider-like ids (bench/presign.sh),
# one region per use so that no id repeats.
ack_region=$(( (ack_secs + 5) * 25000 ))
probe_region=20000
total=$((2 * (ack_region + 3 * probe_region)))
say "signing $total requests"
bash bench/presign.sh "$work/secret" "$total" > "$work/requests.tsv"
next_region=0
region() { r=$next_region; next_region=$((next_region + $1)); }

# The http sink's receiver: 204 to every POST.
sink_port=$(port)
python3 -c '
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(204); self.end_headers()
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()' "$sink_port" &
pids+=($!)

# serve NAME DATA LOG [VAR=value...]: starts batchhook serve on DATA, its
# log lines stamped with their arrival time; sets pid, listen, admin, t_exec.
serve() {
  local name=$1 data=$2 log=$3; shift 3
  listen=$(port) admin=$(port)
  while [ "$admin" = "$listen" ]; do admin=$(port); done
  t_exec=$(now)
  env BATCHHOOK_LISTEN_ADDR="127.0.0.1:$listen" BATCHHOOK_ADMIN_ADDR="127.0.0.1:$admin" \
    BATCHHOOK_SIGNING_SECRET_FILE="$work/secret" BATCHHOOK_API_KEY=bench-key BATCHHOOK_API_BASE_URL="http://127.0.0.1:${sim_port:-1}" \
    BATCHHOOK_DATA_DIR="$data" BATCHHOOK_EXPORT_DIR="$data/exports" BATCHHOOK_SINKS=file,http,exec \
    BATCHHOOK_HTTP_SINK_URL="http://127.0.0.1:$sink_port/" BATCHHOOK_HTTP_SINK_SECRET_FILE="$work/sink-secret" \
    BATCHHOOK_EXEC_SINK_COMMAND='["sh","-c","cat > /dev/null"]' BATCHHOOK_LOG_LEVEL=info "$@" \
    "$bh" serve > >(perl -MTime::HiRes=time -ne 'BEGIN {$| = 1} printf "%.6f %s", time, $_' > "$log") 2>&1 &
  pid=$!
  pids+=("$pid")
}
ready() { # waits for /readyz 200; prints the seconds since exec
  until curl -sf -o /dev/null "http://127.0.0.1:$admin/readyz"; do
    kill -0 "$pid" 2>/dev/null || { say "serve exited:"; tail -20 "$1" >&2; exit 1; }
    sleep 0.005
  done
  awk -v a="$t_exec" -v b="$(now)" 'BEGIN {printf "%.2f", b - a}'
}
stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; }

# probe START COUNT OUT: signed unique webhooks one after another, about 20
# a second, until the file OUT.stop appears; the seconds of each 200 go to OUT.
probe() {
  local start=$1 count=$2 out=$3
  : > "$out"
  tail -n "+$((start + 1))" "$work/requests.tsv" | head -n "$count" | while IFS=$'\t' read -r sig body; do
    [ -e "$out.stop" ] && break
    printf '%s' "$body" | curl -s -o /dev/null -w '%{http_code} %{time_total}\n' -H 'Content-Type: application/json' \
      -H "x-service-webhook-signature: $sig" -H 'X-Service-Attempt: 1' --data-binary @- \
      "http://127.0.0.1:$listen/webhooks/batch-completed" | awk '$1 == 200 {print $2}' >> "$out" || true
    sleep 0.04
  done
}

# lat URL OUT: 200 GETs, one after another on one connection (one curl);
# the seconds of each 200 to OUT.
lat() {
  for _ in $(seq 200); do printf 'url = "%s"\noutput = "/dev/null"\n' "$1"; done > "$work/lat.cfg"
  curl -s -K "$work/lat.cfg" -w '%{http_code} %{time_total}\n' | awk '$1 == 200 {print $2}' > "$2"
}

# admin_lists LABEL: p50/p99 of each list's first page and of a deeper page
# (the cursor after 10 pages of 50) into $work/LABEL.lists.
admin_lists() {
  local label=$1 q url cur i worst1=0 worstd=0
  : > "$work/$label.lists"
  for q in "batches?state=queued" "batches?state=exported" "batches?state=purged" "batches?" \
           "deliveries?state=failed" "deliveries?state=delivered&sink=http" "quarantine?"; do
    url="http://127.0.0.1:$admin/admin/$q&limit=50"
    lat "$url" "$work/l1"
    cur=
    for i in $(seq 10); do
      cur=$(curl -sf "$url${cur:+&cursor=$cur}" | jq -r '.next_cursor // empty')
      [ -n "$cur" ] || break
    done
    if [ -n "$cur" ]; then lat "$url&cursor=$cur" "$work/ld"; else : > "$work/ld"; fi
    printf '%s\t%s\t%s\t%s\t%s\n' "/admin/${q%\?}" "$(pct 50 "$work/l1")" "$(pct 99 "$work/l1")" "$(pct 50 "$work/ld")" "$(pct 99 "$work/ld")" >> "$work/$label.lists"
  done
}

# acks LABEL: wrk, unique random ids, c=64: a 5 s warm-up then ack_secs.
acks() {
  local label=$1 out
  region "$ack_region"
  wrk -t 2 -c 64 -d 5s -s bench/wrk.lua "http://127.0.0.1:$listen/webhooks/batch-completed" -- "$work/requests.tsv" "$r" $((5 * 25000)) 2 unique > /dev/null
  out=$(wrk -t 2 -c 64 -d "${ack_secs}s" -s bench/wrk.lua "http://127.0.0.1:$listen/webhooks/batch-completed" -- \
    "$work/requests.tsv" $((r + 5 * 25000)) $((ack_region - 5 * 25000)) 2 unique | grep '^RESULT')
  say "$label acks: $out"
  awk '{for (i = 2; i <= NF; i++) {split($i, kv, "="); f[kv[1]] = kv[2]}
        printf "%.0f\t%.2f\t%s\t%s\n", f["requests"] / (f["duration_us"] / 1e6), f["p99_us"] / 1000, f["non2xx"], f["wrapped"]}' <<< "$out" > "$work/$label.acks"
}

# measure LABEL DATA: every figure for one database, into $work/LABEL.*.
measure() {
  local label=$1 data=$2 log=$work/$1.starts.log s i t_last n
  : > "$work/$label.fig"
  fig() { printf '%s\t%s\n' "$1" "$2" >> "$work/$label.fig"; }
  # Start to ready, three starts without purging (the retentions at 0).
  for i in 1 2 3; do
    serve "$label" "$data" "$log" BATCHHOOK_FETCH_WORKERS=0 BATCHHOOK_EXPORT_RETENTION=0 BATCHHOOK_RECORD_RETENTION=0
    s=$(ready "$log"); stop
    echo "$s" >> "$work/$label.starts"
  done
  fig start "$(sort -g "$work/$label.starts" | tr '\n' ' ' | sed 's/ $//')"
  say "$label: starts $(fig_get start)"

  # Run A: the default configuration against the simulator. The first purge
  # pass runs at start; the probe sends webhooks meanwhile.
  sim_port=$(port) log=$work/$label.a.log
  serve "$label" "$data" "$log"
  "$work/lookupsim" -addr "127.0.0.1:$sim_port" -api-key bench-key -secret-file "$work/secret" \
    -webhook-url "http://127.0.0.1:$listen/webhooks/batch-completed" -delay 1s -submit-per-minute 0 -max-in-flight 0 \
    > "$work/$label.sim.log" 2>&1 &
  local sim=$!
  pids+=("$sim")
  region "$probe_region"
  probe "$r" "$probe_region" "$work/$label.purgeprobe" &
  local probe_pid=$!
  s=$(ready "$log") || exit 1
  # The pass is over at its purge_pass_finished line, or (a pass with
  # nothing to purge logs none) once 5 s pass without a purge line.
  t_last=$(now) prev=
  for i in $(seq 1200); do
    grep -q '"event":"purge_pass_finished"' "$log" && break
    n=$(grep -c '"event":"\(export_purged\|records_purged\|payment_bodies_purged\|payment_day_file_purged\)"' "$log" || true)
    if [ "$n" != "${prev:-x}" ]; then prev=$n t_last=$(now); fi
    if awk -v a="$t_last" -v b="$(now)" 'BEGIN {exit !(b - a > 5)}'; then break; fi
    sleep 0.1
  done
  touch "$work/$label.purgeprobe.stop"; wait "$probe_pid" || true
  # The pass: its own time (purge_pass_finished: took_ms, and files_ms
  # deleting the exports' files), and what it purged.
  awk '/"event":"(export_purged|records_purged|payment_bodies_purged|payment_day_file_purged)"/ {
      if ($0 ~ /export_purged/) e++
      if (match($0, /"record":[0-9]+/)) r += substr($0, RSTART + 9, RLENGTH - 9)
      if (match($0, /"bodies":[0-9]+/)) p += substr($0, RSTART + 9, RLENGTH - 9) }
    /"event":"purge_pass_finished"/ {
      match($0, /"took_ms":[0-9]+/); took = substr($0, RSTART + 10, RLENGTH - 10)
      match($0, /"files_ms":[0-9]+/); files = substr($0, RSTART + 11, RLENGTH - 11) }
    END { if (took == "") {print "-\t0\t0\t0\t-"; exit}; printf "%.2f\t%d\t%d\t%d\t%.2f\n", took / 1000, e, r, p, files / 1000 }' "$log" > "$work/$label.purge"
  fig purge_probe "$(pct 50 "$work/$label.purgeprobe") / $(pct 99 "$work/$label.purgeprobe") ms ($(wc -l < "$work/$label.purgeprobe") webhooks)"
  say "$label: purge $(cat "$work/$label.purge") (s, exports, records, payment bodies, s deleting files); webhooks meanwhile $(fig_get purge_probe)"
  sleep 12 # past the next release of mapped pages (every 10 s)
  fig rss_rest "$(rssmib "$pid")"
  fig rss_rest_detail "$(rss "$pid")"
  say "$label: RSS at rest $(fig_get rss_rest_detail)"
  # Normal traffic: small batches submitted to the simulator, which signs
  # and sends each one's webhook; the daemon fetches, exports, delivers.
  local t_start sent=0 n_sub=$((traffic_secs * traffic_rate)) wait_s
  t_start=$(now)
  while [ "$sent" -lt "$n_sub" ]; do
    # the next submission is due at t_start + sent / rate
    wait_s=$(awk -v a="$t_start" -v n="$sent" -v r="$traffic_rate" -v b="$(now)" 'BEGIN {w = a + n / r - b; printf "%.3f", (w > 0 ? w : 0)}')
    sleep "$wait_s"
    curl -sf -o /dev/null -H 'Authorization: Bearer bench-key' \
      -d "{\"cpfs\":[$(awk -v s="$sent" 'BEGIN {for (k = 1; k <= 20; k++) printf "%s\"%011.0f\"", (k > 1 ? "," : ""), ((s * 20 + k) * 7919) % 99999999999}')]}" \
      "http://127.0.0.1:$sim_port/api/v1/batches" || say "a submission failed"
    sent=$((sent + 1))
  done
  sleep 10
  fig traffic "$sent batches of 20 CPFs in $(awk -v a="$t_start" -v b="$(now)" 'BEGIN {printf "%.0f", b - a - 10}') s; exported: $(grep -c '"event":"batch_exported"' "$log" || true)"
  fig rss_traffic "$(rssmib "$pid")"
  fig rss_traffic_detail "$(rss "$pid")"
  say "$label: after traffic ($(fig_get traffic)): RSS $(fig_get rss_traffic_detail)"
  stop
  kill "$sim"; wait "$sim" 2>/dev/null || true

  # Run B: no fetching (as bench/compare.sh), for the admin API, the acks
  # and the backup.
  log=$work/$label.b.log
  serve "$label" "$data" "$log" BATCHHOOK_FETCH_WORKERS=0
  ready "$log" > /dev/null
  admin_lists "$label"
  say "$label: lists"; cat "$work/$label.lists" >&2
  acks "$label"
  region "$probe_region"
  rm -f "$work/$label.backupprobe.stop"
  probe "$r" "$probe_region" "$work/$label.backupprobe" &
  probe_pid=$!
  sleep 2
  local t0 t1
  t0=$(now)
  "$bh" backup "$work/$label.backup.db" --admin "http://127.0.0.1:$admin" > "$work/$label.backup.out" 2>&1
  t1=$(now)
  touch "$work/$label.backupprobe.stop"; wait "$probe_pid" || true
  # The stream ends with the daemon's backup_served line; the command then
  # fsyncs the file and checks it.
  t_stream=$(awk '/"event":"backup_served"/ {t = $1} END {print t}' "$log")
  fig backup "$(awk -v a="$t0" -v b="$t1" -v s="$t_stream" 'BEGIN {printf "%.1f s (streamed in %.1f s)", b - a, s - a}'), $(stat -c %s "$work/$label.backup.db") bytes"
  fig backup_probe "$(pct 50 "$work/$label.backupprobe") / $(pct 99 "$work/$label.backupprobe") ms ($(wc -l < "$work/$label.backupprobe") webhooks)"
  say "$label: backup $(fig_get backup); webhooks meanwhile $(fig_get backup_probe)"
  rm -f "$work/$label.backup.db"
  fig batches "$(curl -sf "http://127.0.0.1:$admin/metrics" | awk '/^batchhook_batches\{/ {n += $2} END {printf "%d", n}')"
  stop
  local before
  before=$(stat -c %s "$data/batchhook.db")
  t0=$(now)
  "$bh" compact --data-dir "$data" > "$work/$label.compact.out" 2>&1
  t1=$(now)
  fig compact "$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}') s, $before → $(stat -c %s "$data/batchhook.db") bytes"
  fig compacted "$(used "$data/batchhook.db")"
  say "$label: compact $(fig_get compact)"
  rm -f "$work/$label.purgeprobe.stop"
}
fig_get() { awk -F'\t' -v k="$1" '$1 == k {v = $2} END {print v}' "$work/$label.fig"; }

# used FILE: the bytes of the pages a bbolt file uses, from the newer of its
# two meta pages (little-endian: page size at 24, high-water page id at 56,
# txid at 64): what a backup of it writes. A compacted file's size is
# larger: bbolt grows a file in steps that double while it is small.
used() {
  local ps a b
  ps=$(od -An -t u4 -j 24 -N 4 "$1" | tr -d ' ')
  a=$(od -An -t u8 -j 56 -N 16 "$1" | awk '{print $2, $1}')
  b=$(od -An -t u8 -j $((ps + 56)) -N 16 "$1" | awk '{print $2, $1}')
  printf '%s\n%s\n' "$a" "$b" | sort -n | tail -1 | awk -v ps="$ps" '{printf "%.0f", $2 * ps}'
}

# bytes a batch after compaction, all tombstones and all whole records:
# two small databases of the year's shape with no deliveries or payments.
perbatch() {
  local dir=$work/pb-$1 n=${MEASURE_PERBATCH:-200000}
  shift
  go run ./bench/scale build -dir "$dir" -batches "$n" -sinks 0 -payments-per-minute 0 "$@" > /dev/null 2>&1
  "$bh" compact --data-dir "$dir/data" > /dev/null 2>&1
  echo $(( $(used "$dir/data/batchhook.db") / n ))
  rm -rf "$dir"
}

echo "load before: $(uptime)" > "$work/uptime"
measure empty "$empty/data"
echo "load after the empty database: $(uptime)" >> "$work/uptime"
measure year "$year/data"
echo "load after the year: $(uptime)" >> "$work/uptime"
n_pb=${MEASURE_PERBATCH:-200000}
pb_tomb=$(perbatch tomb -full-days 1 -export-days 1 -due 0)
pb_live=$(perbatch live -full-days 0 -export-days 0 -due 0)

# The table.
get() { awk -F'\t' -v k="$2" '$1 == k {v = $2} END {print v}' "$work/$1.fig"; }
col() { cut -f"$2" "$work/$1"; }
ok() { if awk "BEGIN {exit !($1)}"; then echo yes; else echo no; fi; }
e_acks=$(cat "$work/empty.acks") y_acks=$(cat "$work/year.acks")
e_rps=$(cut -f1 <<< "$e_acks") e_p99=$(cut -f2 <<< "$e_acks") y_rps=$(cut -f1 <<< "$y_acks") y_p99=$(cut -f2 <<< "$y_acks")
e_start=$(get empty start | awk '{print $2}') y_start=$(get year start | awk '{print $2}')
e_purge=$(cut -f1 "$work/empty.purge") y_purge=$(cut -f1 "$work/year.purge")
worst() { sort -t$'\t' -k"$2" -g "$work/$1.lists" | tail -1 | cut -f"$2"; }
e_l1=$(worst empty 3) y_l1=$(worst year 3) e_ld=$(worst empty 5) y_ld=$(worst year 5)
echo
cat "$work/uptime"
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), $(uname -sr), $(go version | awk '{print $3}'); year: $batches batches"
echo
echo "| figure | goal | empty | year | met? |"
echo "|---|---|---|---|---|"
echo "| start to ready (exec to \`/readyz\` 200; three starts) | ≤ 2 s | $(get empty start) s | $(get year start) s | $(ok "$e_start <= 2 && $y_start <= 2") |"
echo "| RSS at rest after start (and its first purge pass) | ≤ 64 MiB | $(get empty rss_rest) MiB | $(get year rss_rest) MiB | $(ok "$(get empty rss_rest) <= 64 && $(get year rss_rest) <= 64") |"
echo "| RSS after normal traffic ($(( traffic_secs * traffic_rate )) webhooks, $(( traffic_secs * traffic_rate / 10 )) minutes at the provider's limit, sent in ${traffic_secs} s) | ≤ 64 MiB | $(get empty rss_traffic) MiB | $(get year rss_traffic) MiB | $(ok "$(get empty rss_traffic) <= 64 && $(get year rss_traffic) <= 64") |"
echo "| durable unique acks, wrk c=64, ${ack_secs} s | year ≥ 80 % of empty | $e_rps/s | $y_rps/s ($(awk -v a="$y_rps" -v b="$e_rps" 'BEGIN {printf "%.0f", 100 * a / b}') %) | $(ok "$y_rps >= 0.8 * $e_rps") |"
echo "| their p99 | year ≤ 1.5× empty | $e_p99 ms | $y_p99 ms ($(awk -v a="$y_p99" -v b="$e_p99" 'BEGIN {printf "%.2f", a / b}')×) | $(ok "$y_p99 <= 1.5 * $e_p99") |"
echo "| admin list pages, p99, worst of 7 lists: first page / a deeper page (limit 50, 200 requests each) | ≤ 50 ms | $e_l1 / ${e_ld} ms | $y_l1 / ${y_ld} ms | $(ok "$y_l1 <= 50 && $e_l1 <= 50 && ${y_ld/-/0} <= 50 && ${e_ld/-/0} <= 50") |"
echo "| first purge pass (\`purge_pass_finished\`: took_ms; exports, records, payment bodies purged; files_ms) | ≤ 1 s | $e_purge s | $y_purge s ($(cut -f2-4 --output-delimiter=', ' "$work/year.purge"); $(cut -f5 "$work/year.purge") s deleting files) | $(ok "${y_purge/-/0} <= 1") |"
echo "| webhook p50 / p99 during the pass | | $(get empty purge_probe) | $(get year purge_probe) | |"
echo "| online backup: time, size | | $(get empty backup) | $(get year backup) | |"
echo "| webhook p50 / p99 during the backup | | $(get empty backup_probe) | $(get year backup_probe) | |"
echo "| compaction (daemon stopped): time, size before → after | | $(get empty compact) | $(get year compact) | |"
echo "| database bytes a batch after compaction: tombstone / whole record ($n_pb of each, no deliveries or payments); the year's pages in use over its batches | | | $pb_tomb / $pb_live B; $(( $(get year compacted) / $(get year batches) )) B ($(get year batches) batches) | |"
echo
echo "admin lists, p50 / p99 ms, first page then the page after 10 (empty | year):"
paste "$work/empty.lists" "$work/year.lists" | awk -F'\t' '{printf "%s: %s / %s, %s / %s | %s / %s, %s / %s\n", $1, $2, $3, $4, $5, $7, $8, $9, $10}'
echo "acks (req/s, p99 ms, non2xx, wrapped): empty $e_acks; year $y_acks"
for l in empty year; do echo "$l: $(get $l traffic); RSS at rest $(get $l rss_rest_detail), after traffic $(get $l rss_traffic_detail)"; done
