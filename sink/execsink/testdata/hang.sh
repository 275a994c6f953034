#!/bin/sh
# hang.sh OUT EXPORT_DIR: starts a grandchild that ignores SIGTERM and
# records its pid, then hangs (ignoring SIGTERM too) until killed.
out=$1
sh -c 'trap "" TERM; echo $$ > "$1/grandchild.tmp"; mv "$1/grandchild.tmp" "$1/grandchild.pid"; exec sleep 120' sh "$out" &
trap "" TERM
echo $$ > "$out/leader.pid"
sleep 120
