package cpf

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"testing"
)

func TestKeyedHashIsHMACOfTheDigits(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	m := hmac.New(sha256.New, key)
	m.Write([]byte("52998224725"))
	want := hex.EncodeToString(m.Sum(nil))
	if got := KeyedHash(key, "52998224725"); got != want {
		t.Fatalf("KeyedHash = %s, want %s", got, want)
	}
	if KeyedHash([]byte("another key, another hash......."), "52998224725") == want {
		t.Fatal("the hash does not depend on the key")
	}
}

func TestCandidatesFindsBothForms(t *testing.T) {
	text := []byte(`{"a":"529.982.247-25","b":"11144477735","c":"123456789012345","d":"52998224726","e":x11144477735}`)
	got := Candidates(text)
	want := []string{"52998224725", "11144477735", "11144477735"}
	if !slices.Equal(got, want) {
		t.Fatalf("Candidates = %v, want %v (a run glued to more digits and a bad check digit are not CPFs)", got, want)
	}
	if got := Candidates([]byte("52998224725,11144477735")); !slices.Equal(got, []string{"52998224725", "11144477735"}) {
		t.Fatalf("adjacent CPFs: %v", got)
	}
}
