package store

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestFindQuarantinedByUniquePrefix(t *testing.T) {
	s, err := Open(t.TempDir(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ids := []string{
		"ab12" + strings.Repeat("0", 60),
		"ab13" + strings.Repeat("0", 60),
		"cd00" + strings.Repeat("1", 60),
	}
	for _, id := range ids {
		if err := s.Quarantine(Quarantined{ID: id, Reason: "r " + id[:4], ReceivedAt: time.Unix(0, 0)}); err != nil {
			t.Fatal(err)
		}
	}
	for prefix, want := range map[string]string{"c": ids[2], "ab12": ids[0], "AB13": ids[1], ids[2]: ids[2]} {
		q, err := s.FindQuarantined(prefix)
		if err != nil || q.ID != want {
			t.Fatalf("FindQuarantined(%q) = %v, %v; want %s", prefix, q, err, want)
		}
	}
	_, err = s.FindQuarantined("ab1")
	if !errors.Is(err, ErrAmbiguous) || !strings.Contains(err.Error(), "2 entries") {
		t.Fatalf("ambiguous prefix: %v", err)
	}
	for _, p := range []string{"", "ef", "ab120"} {
		if _, err := s.FindQuarantined(p + "9"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("FindQuarantined(%q): %v, want ErrNotFound", p+"9", err)
		}
	}
}
