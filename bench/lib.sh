# What the bench scripts share; each sources it from the repository root
# (`. bench/lib.sh`). It makes $work, a temporary directory removed at
# exit, and $pids, the processes the script started (each added by the
# script): at exit, or on SIGINT or SIGTERM, they are stopped (only they)
# and waited for, bench_on_exit runs if the script defines it (to keep
# logs), and $work is removed. port prints a free loopback port.
work=$(mktemp -d "${TMPDIR:-/tmp}/bench.XXXXXX")
pids=()
bench_cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if declare -F bench_on_exit > /dev/null; then bench_on_exit || true; fi
  rm -rf "$work"
}
trap bench_cleanup EXIT
trap 'exit 130' INT TERM

# port: a loopback port nobody listens on.
port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 40000))
    if ! grep -qi -- "$(printf ':%04X ' "$p")" /proc/net/tcp /proc/net/tcp6 2>/dev/null; then echo "$p"; return; fi
  done
}

# need NAME TOOL...: exits 2 naming the first TOOL not installed.
need() {
  local name=$1 t
  shift
  for t in "$@"; do
    command -v "$t" > /dev/null || { echo "$name: $t not found" >&2; exit 2; }
  done
}
