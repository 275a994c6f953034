package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batchhook/batchhook/lookupsim"
)

// On the real binary: a quarantined delivery's log line
// and entry carry its batch_id; `quarantine show` takes a unique prefix of
// the id, refuses an ambiguous one saying how many match, and ends with
// the next step (track the batch).
func TestQuarantineShowByPrefixWithNextStep(t *testing.T) {
	t.Parallel()
	s := newSetup(t, lookupsim.Options{})
	payFile := filepath.Join(t.TempDir(), "payments-secret")
	if err := os.WriteFile(payFile, []byte(e2ePaySecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.env["BATCHHOOK_PAYMENTS_SIGNING_SECRET_FILE"] = payFile
	d := startDaemon(t, s.addr, s.env)
	// Two bodies whose ids share their first digit, and a third.
	byFirst := map[byte][]string{}
	var pair []string
	for i := 0; pair == nil; i++ {
		b := fmt.Sprintf(`{"event":"batch.completed","batch_id":"b_q%d","status":"bogus"}`, i)
		sum := sha256.Sum256([]byte(b))
		id := hex.EncodeToString(sum[:])
		byFirst[id[0]] = append(byFirst[id[0]], b)
		if len(byFirst[id[0]]) == 2 {
			pair = byFirst[id[0]]
		}
	}
	ids := make([]string, 2)
	for i, b := range pair {
		if code, _ := postSigned(t, s.addr, []byte(b), 1); code != 400 {
			t.Fatalf("invalid body: %d", code)
		}
		sum := sha256.Sum256([]byte(b))
		ids[i] = hex.EncodeToString(sum[:])
	}
	batchID := strings.Split(pair[0], `"`)[7]
	waitLogLine(t, d, `"event":"webhook_invalid"`, `"batch_id":"`+batchID+`"`, ids[0]) // written before the 400, read through a pipe

	// A unique prefix: the first digits up to where the two ids differ, plus one.
	n := 0
	for ids[0][n] == ids[1][n] {
		n++
	}
	out, errOut, code := cli(t, d, "", "quarantine", "show", ids[0][:n+1])
	if code != 0 || !strings.Contains(out, "id:") || !strings.Contains(out, ids[0]) ||
		!strings.Contains(out, "batch id:") || !strings.Contains(out, "`batchhook track "+batchID+"`") ||
		!strings.Contains(out, "next step: the provider retries this for ever") {
		t.Fatalf("quarantine show PREFIX: %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = cli(t, d, "", "quarantine", "show", ids[0][:n])
	if code == 0 || !strings.Contains(errOut, "2 entries start with") {
		t.Fatalf("ambiguous prefix: %d\n%s%s", code, out, errOut)
	}
	out, _, code = cli(t, d, "", "quarantine", "list")
	if code != 0 || !strings.Contains(out, "BATCH") || !strings.Contains(out, batchID) {
		t.Fatalf("quarantine list: %d\n%s", code, out)
	}

	// A payments entry: the payments wording, no body, no track.
	payBody := []byte(`["not","an","object"]`)
	if code, _ := postPayment(t, s.addr, payBody, e2ePaySecret, "1"); code != 400 {
		t.Fatalf("payments non-object: %d", code)
	}
	sum := sha256.Sum256(payBody)
	out, _, code = cli(t, d, "", "quarantine", "show", hex.EncodeToString(sum[:])[:12])
	if code != 0 || !strings.Contains(out, "payments") ||
		!strings.Contains(out, "A payment event cannot be fetched by id") || strings.Contains(out, "batchhook track") {
		t.Fatalf("quarantine show (payments): %d\n%s", code, out)
	}
}
