#!/bin/sh
# hang.sh OUT EXPORT_DIR: starts a grandchild that ignores SIGTERM and
# records its pid, waits until it has, records its own pid, then hangs
# (ignoring SIGTERM too) until killed.
out=$1
sh -c 'trap "" TERM; echo $$ > "$1/grandchild.tmp"; mv "$1/grandchild.tmp" "$1/grandchild.pid"; exec sleep 120' sh "$out" &
while [ ! -e "$out/grandchild.pid" ]; do sleep 0.01; done
trap "" TERM
echo $$ > "$out/leader.tmp"
mv "$out/leader.tmp" "$out/leader.pid"
sleep 120
