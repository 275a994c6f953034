package store

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// A database an earlier version wrote holds quarantined and rejected
// bodies as they came, CPFs included. Open masks them once (and marks
// the database done); every read masks too, so no entry is served with
// a CPF, and the quarantine id (the original's SHA-256) is kept.
func TestOpenMasksKeptBodiesOfEarlierVersions(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"event":"batch.completed","batch_id":"529.982.247-25","status":"completed"}`
	old := map[string]any{"id": "abc123", "reason": "status 52998224725 is not one of …", "attempt": 1,
		"received_at": time.Now().UTC(), "raw": []byte(body)}
	oldRejected := map[string]any{"id": 1, "received_at": time.Now().UTC(), "path": "/webhooks/batch-completed",
		"reason": "wrong_length", "signature": "52998224725", "body_len": 20, "body_sha256": "00", "raw": []byte(`{"cpf":"52998224725"}`)}
	err = s.db.Update(func(tx *bolt.Tx) error {
		q, _ := json.Marshal(old)
		r, _ := json.Marshal(oldRejected)
		if err := tx.Bucket(bucketQuarantine).Put([]byte("abc123"), q); err != nil {
			return err
		}
		if err := tx.Bucket(bucketRejected).Put(rejectedKey(1), r); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Delete(keptBodiesMasked) // as an earlier version left it
	})
	if err != nil {
		t.Fatal(err)
	}
	// Read before the migration: masked as it is read.
	q, err := s.GetQuarantined("abc123")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(q.Raw), "529") || strings.Contains(q.Reason, "529") || !q.Masked || q.BodyLen != len(body) {
		t.Fatalf("read unmasked: %+v (%s)", q, q.Raw)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = Open(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.db.View(func(tx *bolt.Tx) error {
		for _, v := range [][]byte{tx.Bucket(bucketQuarantine).Get([]byte("abc123")), tx.Bucket(bucketRejected).Get(rejectedKey(1))} {
			var e struct {
				Raw       []byte `json:"raw"`
				Signature string `json:"signature"`
				Reason    string `json:"reason"`
				Masked    bool   `json:"masked"`
			}
			if err := json.Unmarshal(v, &e); err != nil {
				return err
			}
			if strings.Contains(string(e.Raw)+e.Signature+e.Reason, "529") || !e.Masked {
				t.Errorf("stored after Open: %s", v)
			}
		}
		if tx.Bucket(bucketMeta).Get(keptBodiesMasked) == nil {
			t.Error("the database is not marked masked")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	q, err = s.GetQuarantined("abc123")
	if err != nil || q.ID != "abc123" || string(q.Raw) != `{"event":"batch.completed","batch_id":"***.***.***-**","status":"completed"}` || q.BodyLen != len(body) {
		t.Fatalf("after Open: %+v %s (%v)", q, q.Raw, err)
	}
	r, err := s.GetRejected("1")
	if err != nil || string(r.Raw) != `{"cpf":"***********"}` || r.Signature != "***********" || !r.Masked {
		t.Fatalf("rejected after Open: %+v %s (%v)", r, r.Raw, err)
	}
}
