package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batchhook/batchhook/lookupsim"
)

// testdata/layout-v1.db was written by the batchhook of commit 4cfdc61
// (before the record layout that migrate upgrades from): four batch.completed webhooks
// accepted, ids b_00000000000000000c03, b_000000000000000000a1,
// b_00000000000000000f77 (compact bodies) and b_0000000000000000spaced (a
// body with spaces), in that order, then `batchhook compact`.
var layoutV1IDs = []string{"b_00000000000000000c03", "b_000000000000000000a1", "b_00000000000000000f77", "b_0000000000000000spaced"}

// The real binary, started on a database an earlier version wrote, moves
// its records once (records_migrated, 4), answers their replays duplicate,
// lists them in their old order with a new batch first, and shows each
// record as it was; a second start moves nothing.
func TestUpgradeMovesAnEarlierDatabase(t *testing.T) {
	t.Parallel()
	s := newSetup(t, lookupsim.Options{})
	old, err := os.ReadFile("testdata/layout-v1.db")
	if err != nil {
		t.Fatal(err)
	}
	data := s.env["BATCHHOOK_DATA_DIR"]
	if err := os.WriteFile(filepath.Join(data, "batchhook.db"), old, 0o600); err != nil {
		t.Fatal(err)
	}
	s.env["BATCHHOOK_FETCH_WORKERS"] = "0"
	d := startDaemon(t, s.addr, s.env)
	if !strings.Contains(d.out.String(), `"event":"records_migrated"`) || !strings.Contains(d.out.String(), `"batches":4`) {
		t.Fatalf("no records_migrated line for 4 batches:\n%s", d.out.String())
	}
	for _, id := range layoutV1IDs {
		if code, reply := postSigned(t, s.addr, []byte(`{"event":"batch.completed","batch_id":"`+id+`","status":"completed"}`), 2); code != 200 || reply["result"] != "duplicate" {
			t.Fatalf("replay of %s after the upgrade: %d %v, want 200 duplicate", id, code, reply)
		}
	}
	if code, reply := postSigned(t, s.addr, []byte(`{"event":"batch.completed","batch_id":"b_new","status":"failed"}`), 1); code != 200 || reply["result"] != "accepted" {
		t.Fatalf("a new batch after the upgrade: %d %v", code, reply)
	}
	code, body := get(t, d.admin+"/admin/batches", "")
	var list struct {
		Items []struct {
			ID     string `json:"id"`
			State  string `json:"state"`
			Status string `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(body), &list); code != 200 || err != nil {
		t.Fatalf("GET /admin/batches: %d %v %s", code, err, body)
	}
	var got []string
	for _, b := range list.Items {
		got = append(got, b.ID+" "+b.State+" "+b.Status)
	}
	want := []string{"b_new queued failed", "b_0000000000000000spaced queued partial", "b_00000000000000000f77 queued completed",
		"b_000000000000000000a1 queued completed", "b_00000000000000000c03 queued completed"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("batches after the upgrade, newest first:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	d.stop(t)
	d = startDaemon(t, s.addr, s.env)
	if strings.Contains(d.out.String(), `"event":"records_migrated"`) {
		t.Fatalf("the second start moved records again:\n%s", d.out.String())
	}
	if code, body := get(t, d.admin+"/admin/batches/b_0000000000000000spaced", ""); code != 200 || !strings.Contains(body, `"status":"partial"`) {
		t.Fatalf("GET the spaced batch after a restart: %d %s", code, body)
	}
}
