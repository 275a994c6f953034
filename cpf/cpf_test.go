package cpf

import (
	"bufio"
	"errors"
	"os"
	"strings"
	"testing"
)

// vectors.txt was made by testdata/gen.py, an independent implementation.
func TestNormalizeAgainstIndependentVectors(t *testing.T) {
	f, err := os.Open("testdata/vectors.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	valid, invalid := 0, 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		kind, value, _ := strings.Cut(sc.Text(), " ")
		got, err := Normalize(value)
		switch kind {
		case "valid":
			valid++
			want := strings.NewReplacer(".", "", "-", "").Replace(value)
			if err != nil || got != want {
				t.Errorf("Normalize(%q) = %q, %v; want %q", value, got, err, want)
			}
		case "invalid":
			invalid++
			if err == nil {
				t.Errorf("Normalize(%q) accepted an invalid CPF", value)
			}
		}
	}
	if valid < 40 || invalid < 50 {
		t.Fatalf("read %d valid and %d invalid vectors", valid, invalid)
	}
}

func TestNormalizeReasons(t *testing.T) {
	cases := map[string]error{
		"529.982.247-25":   nil, // a published example
		" 52998224725 ":    nil,
		"529.982.247-26":   ErrCheckDigits,
		"111.111.111-11":   ErrRepeated,
		"5299822472":       ErrFormat,
		"529982247255":     ErrFormat,
		"529-982.247.25":   ErrFormat,
		"52998224a25":      ErrFormat,
		"":                 ErrFormat,
		"529.982.247-2５":   ErrFormat,
		"+52998224725":     ErrFormat,
		"529 982 247 25  ": ErrFormat,
	}
	for in, want := range cases {
		if _, err := Normalize(in); !errors.Is(err, want) {
			t.Errorf("Normalize(%q) = %v, want %v", in, err, want)
		}
	}
}

func TestMaskNeverShowsTheWholeNumber(t *testing.T) {
	cases := map[string]string{
		"123.456.789-09":         "***.456.789-**",
		"12345678909":            "***.456.789-**",
		"12345":                  "*****",
		"not a cpf at all, long": "**************",
	}
	for in, want := range cases {
		if got := Mask(in); got != want {
			t.Errorf("Mask(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCheckDigitsCompleteTheIndependentVectors(t *testing.T) {
	f, err := os.Open("testdata/vectors.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		kind, value, _ := strings.Cut(sc.Text(), " ")
		if kind != "valid" {
			continue
		}
		d := strings.NewReplacer(".", "", "-", "").Replace(value)
		if got := CheckDigits(d[:9]); got != d[9:] {
			t.Errorf("CheckDigits(%s) = %s, want %s", d[:9], got, d[9:])
		}
		n++
	}
	if n < 40 {
		t.Fatalf("checked %d vectors", n)
	}
}
