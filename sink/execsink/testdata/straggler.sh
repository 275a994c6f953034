#!/bin/sh
# straggler.sh OUT EXPORT_DIR: leaves a process behind that ignores
# SIGTERM and keeps stdout open, waits until it has recorded its pid,
# then exits 0.
out=$1
sh -c 'trap "" TERM; echo $$ > "$1/straggler.tmp"; mv "$1/straggler.tmp" "$1/straggler.pid"; exec sleep 120' sh "$out" &
while [ ! -e "$out/straggler.pid" ]; do sleep 0.01; done
echo "left one behind"
exit 0
