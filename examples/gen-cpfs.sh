#!/bin/sh
# Writes the sample input of `batchhook submit` (README "Submitting") to
# stdout:
#
#   sh examples/gen-cpfs.sh > examples/cpfs.txt
#
# 27 lines: 20 valid CPFs (odd ones as 123.456.789-09, even ones as
# 12345678909), 3 duplicates of them (one in each form and one exact
# repeat), and 4 invalid lines (a wrong check digit, repeated digits, too
# few digits, a letter). batchhook reports the invalid ones by line
# number, masked, drops the duplicates and submits the 20 as one batch.
#
# The check digits are computed here, in awk, independently of batchhook's
# cpf package; examples/examples_test.go checks the file against both.
# The numbers are synthetic (a fixed arithmetic sequence of bases): use
# them against the simulator or the provider's sandbox, never as data.
set -eu
LC_ALL=C awk '
# dv: the mod-11 check digit over the first n digits of s, weights n+1
# down to 2; a remainder of 10 gives 0.
function dv(s, n,    i, sum, r) {
	sum = 0
	for (i = 1; i <= n; i++) sum += substr(s, i, 1) * (n + 2 - i)
	r = (sum * 10) % 11
	return r == 10 ? 0 : r
}
function cpf(base,    d1) { d1 = dv(base, 9); return base d1 dv(base d1, 10) }
function dotted(c) { return substr(c, 1, 3) "." substr(c, 4, 3) "." substr(c, 7, 3) "-" substr(c, 10, 2) }
BEGIN {
	for (i = 1; i <= 20; i++) {
		c[i] = cpf(sprintf("%09d", (i * 48271 * 997 + 12345) % 1000000000))
		line = (i % 2 == 1) ? dotted(c[i]) : c[i]
		print line
		if (i == 5) print c[1]                     # duplicate: line 1 without punctuation
		if (i == 8) print dotted(c[2])             # duplicate: line 2 with punctuation
		if (i == 12) print line                    # duplicate: an exact repeat
		if (i == 6) {                              # invalid: the last check digit off by one
			bad = substr(c[4], 1, 10) ((substr(c[4], 11, 1) + 1) % 10)
			print bad
		}
		if (i == 10) print "111.111.111-11"        # invalid: repeated digits
		if (i == 15) print "1234567890"            # invalid: 10 digits
		if (i == 18) print "123.456.789-0X"        # invalid: a letter
	}
}'
