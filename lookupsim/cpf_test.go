package lookupsim

import (
	"slices"
	"testing"
)

// validCPF is written independently of package cpf: the textbook form,
// remainder of sum*10 mod 11, with 10 counting as 0.
func validCPF(s string) bool {
	if len(s) != 11 {
		return false
	}
	d := make([]int, 11)
	allSame := true
	for i := range 11 {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
		d[i] = int(s[i] - '0')
		allSame = allSame && d[i] == d[0]
	}
	if allSame {
		return false
	}
	for _, n := range []int{9, 10} {
		sum := 0
		for i := range n {
			sum += d[i] * (n + 1 - i)
		}
		if (sum*10)%11%10 != d[n] {
			return false
		}
	}
	return true
}

func TestValidCPFKnownValues(t *testing.T) {
	// Published examples and hand-checked values, so the checker itself is tested.
	for _, good := range []string{"52998224725", "11144477735", "12345678909"} {
		if !validCPF(good) {
			t.Errorf("%s should be valid", good)
		}
	}
	for _, bad := range []string{"52998224724", "11111111111", "12345678900", "1234567890", "1234567890a"} {
		if validCPF(bad) {
			t.Errorf("%s should be invalid", bad)
		}
	}
}

func TestSampleCPFs(t *testing.T) {
	a := SampleCPFs(1000, 42)
	if len(a) != 1000 {
		t.Fatalf("got %d CPFs", len(a))
	}
	seen := map[string]bool{}
	for _, c := range a {
		if !validCPF(c) {
			t.Fatalf("%s has wrong check digits", c)
		}
		if seen[c] {
			t.Fatalf("%s repeated", c)
		}
		seen[c] = true
	}
	if b := SampleCPFs(1000, 42); !slices.Equal(a, b) {
		t.Fatal("same seed gave different CPFs")
	}
	if c := SampleCPFs(1000, 43); slices.Equal(a, c) {
		t.Fatal("different seeds gave the same CPFs")
	}
	if got := SampleCPFs(0, 1); len(got) != 0 {
		t.Fatalf("SampleCPFs(0) = %v", got)
	}
}

func TestNormalizeCPFs(t *testing.T) {
	got, err := normalizeCPFs([]string{"529.982.247-25", "52998224725", "111.444.777-35", "12345678909"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"52998224725", "11144477735", "12345678909"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for _, bad := range []string{"", "5299822472", "529982247255", "52998224725 ", "529 982 247 25", "5299822472a", "５２９９８２２４７２５"} {
		if _, err := normalizeCPFs([]string{"12345678909", bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
