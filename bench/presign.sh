#!/usr/bin/env bash
# Writes N pre-signed batch.completed requests for wrk (bench/wrk.lua), one a
# line: the signature header value, a tab, the raw body. Every line has the
# same length (ids are zero-padded), so that each wrk thread can seek straight
# to its own slice.
#   bash bench/presign.sh SECRET_FILE N [RUN] > requests.tsv
#
# The HMAC is computed by Perl's Digest::SHA (its own C implementation of
# SHA-256 and HMAC), never by batchhook's signature package: the daemon
# accepting these requests is then evidence that both agree with the
# provider's scheme (document 5.2), which bench/presign_test.go checks.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: bash bench/presign.sh SECRET_FILE N [RUN]" >&2
  exit 2
fi
secret_file=$1 n=$2 run=${3:-$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')}
case $n in ''|*[!0-9]*) echo "presign: N must be a number, not '$n'" >&2; exit 2 ;; esac
case $run in *[!A-Za-z0-9]*) echo "presign: RUN must be letters and digits" >&2; exit 2 ;; esac
exec perl -MDigest::SHA=hmac_sha256_hex -MMIME::Base64=encode_base64 -e '
  my ($secret_file, $n, $run) = @ARGV;
  open(my $f, "<:raw", $secret_file) or die "presign: $secret_file: $!\n";
  local $/; my $secret = <$f>; close $f;
  # The daemon reads a secret file the same way: one final line ending dropped.
  $secret =~ s/\r?\n\z//;
  for my $i (0 .. $n - 1) {
    my $body = sprintf(q({"event":"batch.completed","batch_id":"wrk%s_%09d","status":"failed","total_requested":1,"total_found":0,"total_not_found":0,"completed_at":"2026-01-01T00:00:00Z"}), $run, $i);
    print encode_base64(hmac_sha256_hex($body, $secret), ""), "\t", $body, "\n";
  }
' "$secret_file" "$n" "$run"
