package cpf

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// TestScrubMasksEveryCPFShape: the forms a provider's error body or a
// stranger's request may hold a CPF in, alone and inside a sentence or a
// JSON body. Each digit of the number becomes '*' and its layout stays;
// text that holds no CPF is kept as it was.
func TestScrubMasksEveryCPFShape(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"52998224725", "***********"},
		{"529.982.247-25", "***.***.***-**"},
		{"529 982 247 25", "*** *** *** **"},
		{"529982247-25", "*********-**"},
		{"529-982-247-25", "***-***-***-**"},
		{"529/982/247/25", "***/***/***/**"},
		{"529.982.247/25", "***.***.***/**"},
		{"529 . 982 . 247 - 25", "*** . *** . *** - **"},
		{"529\u00a0982\u00a0247\u00a025", "***\u00a0***\u00a0***\u00a0**"},
		{"529.982.247\u201325", "***.***.***\u2013**"},
		{"529,982,247-25", "***,***,***-**"},
		{"5 2 9 9 8 2 2 4 7 2 5", "* * * * * * * * * * *"},
		{"５２９９８２２４７２５", "***********"}, // full-width digits: one '*' each
		{"cpf 529 982 247 25 is invalid", "cpf *** *** *** ** is invalid"},
		{"cpfs[3]=529.982.247-25; cpfs[4]=111.444.777-35.", "cpfs[3]=***.***.***-**; cpfs[4]=***.***.***-**."},
		{"bad cpf: 529982247 (check digits missing)", "bad cpf: ********* (check digits missing)"},
		{"id 1529982247250 unknown", "id ************* unknown"},
		{`{"total_found":52998224725,"n":12}`, `{"total_found":***********,"n":12}`},
		{`{"52998224725":1}`, `{"***********":1}`},
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
			want := "error: cpf " + strings.Map(func(r rune) rune {
				if r >= '0' && r <= '9' {
					return '*'
				}
				return r
			}, style(d)) + " rejected"
			if got != want || strings.ContainsAny(got, "0123456789") {
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

// TestScrubBytesMasksABodyInPlaceOfItsCPFs: a kept body keeps its length
// and every byte that is not a digit of a CPF; one without a CPF comes back
// as the same slice.
func TestScrubBytesMasksABodyInPlaceOfItsCPFs(t *testing.T) {
	in := []byte(`{"event":"batch.completed","batch_id":"529.982.247-25","status":"bogus","total_found":12}`)
	got := ScrubBytes(in)
	want := `{"event":"batch.completed","batch_id":"***.***.***-**","status":"bogus","total_found":12}`
	if string(got) != want || len(got) != len(in) {
		t.Fatalf("ScrubBytes = %s, want %s", got, want)
	}
	if string(in) == want {
		t.Fatal("ScrubBytes changed its argument")
	}
	clean := []byte(`{"event":"batch.completed","batch_id":"b_1","status":"bogus"}`)
	if got := ScrubBytes(clean); &got[0] != &clean[0] {
		t.Fatal("a body without a CPF was copied")
	}
}

// TestScrubDoesNotAllocateWithoutARun: log values are scrubbed on every
// line that quotes one; text without a nine-digit run costs no allocation.
func TestScrubDoesNotAllocateWithoutARun(t *testing.T) {
	for _, s := range []string{"webhook body over the size limit", "65536", "/webhooks/batch-completed", "2026-11-24T10:00:00Z", "ação 12345678"} {
		if n := testing.AllocsPerRun(100, func() { _ = Scrub(s) }); n != 0 {
			t.Errorf("Scrub(%q): %v allocations, want 0", s, n)
		}
	}
}
