#!/bin/sh
# record.sh OUT EXPORT_DIR: writes what the exec sink gave it into OUT.
# /proc/$$/environ is the environment the process was started with, before
# the shell added anything of its own.
out=$1
shift
printf '%s\n' "$@" > "$out/args"
tr '\0' '\n' < /proc/$$/environ > "$out/environ"
pwd -P > "$out/cwd"
readlink /proc/$$/fd/0 > "$out/stdin"
exit 0
