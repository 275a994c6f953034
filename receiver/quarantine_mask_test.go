package receiver

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// A signed body holding CPFs is quarantined masked: its id is the SHA-256
// of the body that came (so a retry is kept once), BodyLen its length,
// and the kept bytes have each digit of a CPF-shaped run replaced, the
// rest unchanged.
func TestQuarantineKeepsTheBodyMasked(t *testing.T) {
	e := startPayments(t, true, nil)
	body := []byte(`{"event":"batch.completed","batch_id":"b_m1","status":"bogus","note":"529.982.247-25","52998224725":1}`)
	for range 2 {
		if r := e.post(t, testPath, body, signed(body)); r.code != 400 {
			t.Fatalf("bogus status: %d", r.code)
		}
	}
	sum := sha256.Sum256(body)
	q, err := e.store.GetQuarantined(hex.EncodeToString(sum[:]))
	if err != nil {
		t.Fatalf("not kept under the original's sha256: %v", err)
	}
	want := `{"event":"batch.completed","batch_id":"b_m1","status":"bogus","note":"***.***.***-**","***********":1}`
	if string(q.Raw) != want || q.BodyLen != len(body) || !q.Masked || q.BatchID != "b_m1" {
		t.Fatalf("kept %s (len %d, masked %v, batch %q), want %s", q.Raw, q.BodyLen, q.Masked, q.BatchID, want)
	}
	if n, _ := e.store.CountQuarantined(); n != 1 {
		t.Fatalf("%d entries for one body sent twice", n)
	}
	if strings.Contains(e.logs.String(), "529") {
		t.Fatalf("the log holds the CPF:\n%s", e.logs.String())
	}
}
