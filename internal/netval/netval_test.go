package netval

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTextMasksCPFsAndBoundsBytes(t *testing.T) {
	cases := []struct {
		in, want string
		max      int
	}{
		{"/admin/batches/52998224725", "/admin/batches/***********", Path},
		{"cpf 529.982.247-25", "cpf ***.***.***-**", Header},
		{"batch.completed", "batch.completed", Header},
		{"", "", Header},
		{"abcdef", "abc…(6 bytes)", 3},
		// The cut falls inside "é" (2 bytes): it moves back to its start.
		{"aé", "a…(3 bytes)", 2},
		{"a\xffb", "a\uFFFDb", 10},
		// A CPF the cut splits after nine digits is still masked.
		{"x 529982247251234", "x *********…(17 bytes)", 11},
	}
	for _, c := range cases {
		if got := Text(c.in, c.max); got != c.want {
			t.Errorf("Text(%q, %d) = %q, want %q", c.in, c.max, got, c.want)
		}
	}
}

func TestTextOfAHugeValueIsSmall(t *testing.T) {
	in := "/admin/batches/" + strings.Repeat("9", 19_000)
	got := Text(in, Path)
	if len(got) > Path+30 || strings.Contains(got, "999999999") || !utf8.ValidString(got) {
		t.Fatalf("Text of a %d-byte path is %d bytes: %q", len(in), len(got), got)
	}
	if !strings.HasSuffix(got, "(19015 bytes)") {
		t.Fatalf("the cut does not name the length sent: %q", got)
	}
}
