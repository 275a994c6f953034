#!/bin/sh
# touch.sh OUT EXPORT_DIR: proves that it ran.
: > "$1/ran"
