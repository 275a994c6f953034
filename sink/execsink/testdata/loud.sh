#!/bin/sh
# loud.sh EXPORT_DIR: one line on stderr, then 100 MB on stdout, exit 0.
echo "first line on stderr" >&2
head -c 104857600 /dev/zero | tr '\0' 'x'
exit 0
