#!/bin/sh
# exit.sh CODE EXPORT_DIR: prints something that must never reach a
# Result.Reason, then exits with CODE.
echo "personal data 529.982.247-25"
echo "more on stderr" >&2
exit "$1"
