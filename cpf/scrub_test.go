package cpf

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// TestScrubMasksEveryCPFShape: the forms a provider's error body may echo a
// CPF in, alone and inside a sentence. Nothing of the number survives, and
// text that holds no CPF is kept as it was.
func TestScrubMasksEveryCPFShape(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"52998224725", "***"},
		{"529.982.247-25", "***"},
		{"529 982 247 25", "***"},
		{"529982247-25", "***"},
		{"529-982-247-25", "***"},
		{"529/982/247/25", "***"},
		{"529.982.247/25", "***"},
		{"529 . 982 . 247 - 25", "***"},
		{"529\u00a0982\u00a0247\u00a025", "***"},
		{"529.982.247\u201325", "***"},
		{"529,982,247-25", "***"},
		{"5 2 9 9 8 2 2 4 7 2 5", "***"},
		{"５２９９８２２４７２５", "***"}, // full-width digits
		{"cpf 529 982 247 25 is invalid", "cpf *** is invalid"},
		{"cpfs[3]=529.982.247-25; cpfs[4]=111.444.777-35.", "cpfs[3]=***; cpfs[4]=***."},
		{"bad cpf: 529982247 (check digits missing)", "bad cpf: *** (check digits missing)"},
		{"id 1529982247250 unknown", "id *** unknown"},
		// No CPF: kept.
		{"rate limited, retry in 30 s", "rate limited, retry in 30 s"},
		{"at most 1000 cpfs per batch", "at most 1000 cpfs per batch"},
		{"retry after 13:40 on 2026-11-24", "retry after 13:40 on 2026-11-24"},
		{"version 1.2.3", "version 1.2.3"},
		{"", ""},
		{"ação inválida", "ação inválida"},
	} {
		if got := Scrub(tt.in); got != tt.want {
			t.Errorf("Scrub(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestScrubLeavesNoDigitsOfAValidCPF runs every valid vector, in each
// separator style, through Scrub inside a message.
func TestScrubLeavesNoDigitsOfAValidCPF(t *testing.T) {
	styles := []func(d string) string{
		func(d string) string { return d },
		func(d string) string { return d[:3] + "." + d[3:6] + "." + d[6:9] + "-" + d[9:] },
		func(d string) string { return d[:3] + " " + d[3:6] + " " + d[6:9] + " " + d[9:] },
		func(d string) string { return d[:9] + "-" + d[9:] },
		func(d string) string { return d[:3] + "/" + d[3:6] + "/" + d[6:9] + "/" + d[9:] },
	}
	n := 0
	for _, d := range validVectors(t) {
		for _, style := range styles {
			msg := "error: cpf " + style(d) + " rejected"
			got := Scrub(msg)
			if got != "error: cpf *** rejected" || strings.Contains(got, d[3:6]) {
				t.Fatalf("Scrub(%q) = %q", msg, got)
			}
			n++
		}
	}
	if n < 200 {
		t.Fatalf("only %d cases", n)
	}
}

// validVectors returns the 11 digits of every valid CPF in
// testdata/vectors.txt (made by an independent tool).
func validVectors(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("testdata/vectors.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if kind, value, _ := strings.Cut(sc.Text(), " "); kind == "valid" {
			out = append(out, strings.NewReplacer(".", "", "-", "").Replace(value))
		}
	}
	return out
}
