package sink

import "testing"

// TestMessageIDsOfTwoBatchesNeverMeet: a batch id may hold ":" (and "%"),
// so without encoding, batch "b_1" at version 1 and a batch named "b_1:r1"
// at version 0 would both begin their ids "b_1:r1", and a receiver that
// deduplicates on ids would drop one batch's parts as the other's.
func TestMessageIDsOfTwoBatchesNeverMeet(t *testing.T) {
	cases := []struct {
		id      string
		version int
		want    string
	}{
		{"b_1", 0, "b_1"},
		{"b_1", 1, "b_1:r1"},
		{"b_1:r1", 0, "b_1%3Ar1"},
		{"b_1:r1", 2, "b_1%3Ar1:r2"},
		{"a%3Ab", 0, "a%253Ab"},
		{"a:b", 0, "a%3Ab"},
		{"b_0123456789abcdef0123", 7, "b_0123456789abcdef0123:r7"},
	}
	seen := map[string]string{}
	for _, c := range cases {
		got := IDBase(c.id, c.version)
		if got != c.want {
			t.Errorf("IDBase(%q, %d) = %q, want %q", c.id, c.version, got, c.want)
		}
		key := got + ":2"
		if other, ok := seen[key]; ok {
			t.Errorf("%q at version %d and %s share the message id %q", c.id, c.version, other, key)
		}
		seen[key] = c.id
	}
}
