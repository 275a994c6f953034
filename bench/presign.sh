#!/usr/bin/env bash
# Writes N pre-signed batch.completed requests for wrk (bench/wrk.lua), one a
# line: the signature header value, a tab, the raw body. Every line has the
# same length (ids are 22 characters), so that each wrk thread can seek straight
# to its own slice.
#   bash bench/presign.sh SECRET_FILE N [RUN] > requests.tsv
#   BENCH_IDS=ordered bash bench/presign.sh ...   (ids in order: wrk<RUN>_<line>)
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
exec perl -MDigest::SHA=hmac_sha256_hex,sha256_hex -MMIME::Base64=encode_base64 -e '
  my ($secret_file, $n, $run, $ordered) = @ARGV;
  open(my $f, "<:raw", $secret_file) or die "presign: $secret_file: $!\n";
  local $/; my $secret = <$f>; close $f;
  # The daemon reads a secret file the same way: one final line ending dropped.
  $secret =~ s/\r?\n\z//;
  for my $i (0 .. $n - 1) {
    # Ids shaped like real ones (b_ and 20 hex, as the simulator makes them), in no order: a
    # hash of the run and the line, so the id index takes them at random
    # places, as it takes real ones.
    my $id = $ordered ? sprintf("wrk%s_%09d", $run, $i) : "b_" . substr(sha256_hex("$run:$i"), 0, 20);
    my $body = sprintf(q({"event":"batch.completed","batch_id":"%s","status":"failed","total_requested":1,"total_found":0,"total_not_found":0,"completed_at":"2026-01-01T00:00:00Z"}), $id);
    print encode_base64(hmac_sha256_hex($body, $secret), ""), "\t", $body, "\n";
  }
' "$secret_file" "$n" "$run" "$([ "${BENCH_IDS:-}" = ordered ] && echo 1 || echo 0)"
