package e2e

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batchhook/batchhook/internal/signature"
	"github.com/batchhook/batchhook/lookupsim"
	"github.com/batchhook/batchhook/store"
)

// postRaw posts body to the batch webhook with sig as the signature header.
func postRaw(t *testing.T, addr string, body []byte, sig string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+e2ePath, bytes.NewReader(body))
	req.Header.Set(signature.Header, sig)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// On the real binary: rejected deliveries are kept (body,
// header, reason) and `batchhook verify --rejected ID` explains them as
// verify does: the openssl vector signed with another secret is valid under
// that secret and a mismatch under the daemon's; a 44-character value is
// named. The body never reaches the log, and a flood of forged requests is
// kept only as far as the log sampler lets its lines through.
func TestRejectedDeliveriesAreKeptAndVerifiable(t *testing.T) {
	t.Parallel()
	s := newSetup(t, lookupsim.Options{})
	s.env["BATCHHOOK_REJECTED_KEEP"] = "1000"
	d := startDaemon(t, s.addr, s.env)
	dir := filepath.Join("..", "internal", "signature", "testdata")
	body, err := os.ReadFile(filepath.Join(dir, "body1.json"))
	if err != nil {
		t.Fatal(err)
	}
	const vector = "MTM0MjUzZDYwZGI3OGRmYTRiMjE1OTk1YmY1YjlhMTE3MzY3MTc1MDRjMWQ4OGI2MTdlYjEwYjJmOGY0ZGI2Yg==" // openssl, testdata/README.md
	if code := postRaw(t, s.addr, body, vector); code != 401 {
		t.Fatalf("other secret: %d", code)
	}
	if code := postRaw(t, s.addr, body, "E0JT1g23jfpLIVmVv1uaEXNnF1BMHYi2F+sQsvj022s="); code != 401 {
		t.Fatalf("raw digest: %d", code)
	}
	var list struct {
		Items []struct {
			ID     uint64 `json:"id"`
			Reason string `json:"reason"`
		} `json:"items"`
	}
	waitFor(t, func() bool {
		out, _, code := cli(t, d, "", "rejected", "list", "--json")
		return code == 0 && json.Unmarshal([]byte(out), &list) == nil && len(list.Items) == 2
	})
	if list.Items[0].Reason != "raw_digest_encoding" || list.Items[1].Reason != "mismatch" || list.Items[1].ID != 1 {
		t.Fatalf("rejected list: %+v", list.Items)
	}
	out, _, code := cli(t, d, "", "rejected", "show", "1")
	if code != 0 || !strings.Contains(out, vector) || !strings.Contains(out, "São Paulo") || !strings.Contains(out, "mismatch") {
		t.Fatalf("rejected show 1: %d\n%s", code, out)
	}
	out, errOut, code := cli(t, d, "", "verify", "--rejected", "1", "--secret-file", filepath.Join(dir, "secret1.txt"))
	if code != 0 || !strings.HasPrefix(out, "valid: delivery 1 is signed with this secret") {
		t.Fatalf("verify --rejected 1 (the sender's secret): %d %s%s", code, out, errOut)
	}
	out, _, code = cli(t, d, "", "verify", "--rejected", "1", "--secret-file", s.env["BATCHHOOK_SIGNING_SECRET_FILE"])
	if code != 1 || !strings.Contains(out, "invalid: does not match") || !strings.Contains(out, "(mismatch)") {
		t.Fatalf("verify --rejected 1 (the daemon's secret): %d %s", code, out)
	}
	out, _, code = cli(t, d, "", "verify", "--rejected", "2", "--secret-file", filepath.Join(dir, "secret1.txt"))
	if code != 1 || !strings.Contains(out, "(raw_digest_encoding)") {
		t.Fatalf("verify --rejected 2: %d %s", code, out)
	}
	if _, errOut, code = cli(t, d, "", "verify", "--rejected", "99", "--secret-file", filepath.Join(dir, "secret1.txt")); code != 1 || !strings.Contains(errOut, "404") {
		t.Fatalf("verify --rejected 99: %d %s", code, errOut)
	}

	// A flood: 300 forged requests from 10 senders. What is kept follows
	// the sampled log lines (20 a second), not the requests.
	time.Sleep(1100 * time.Millisecond) // a fresh sampling second
	start := time.Now()
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 30 {
				req, _ := http.NewRequest(http.MethodPost, "http://"+s.addr+e2ePath, strings.NewReader(`{"forged":1}`))
				if resp, err := http.DefaultClient.Do(req); err == nil {
					resp.Body.Close()
				}
			}
		}()
	}
	wg.Wait()
	seconds := math.Ceil(time.Since(start).Seconds())
	// The writer keeps them off the reply path: wait for the first, then
	// count them once the daemon has stopped (its writer writes what is
	// still queued before it returns).
	waitFor(t, func() bool {
		out, _, _ := cli(t, d, "", "rejected", "list", "--json")
		return json.Unmarshal([]byte(out), &list) == nil && len(list.Items) > 2
	})
	d.stop(t)
	if strings.Contains(d.out.String(), "São Paulo") || strings.Contains(d.out.String(), vector) {
		t.Fatal("a rejected body or signature reached the log")
	}
	st, err := store.Open(s.env["BATCHHOOK_DATA_DIR"], time.Second)
	if err != nil {
		t.Fatal(err)
	}
	kept, err := st.ListRejected()
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	flood := len(kept) - 2
	if flood < 1 || float64(flood) > 20*(seconds+1) {
		t.Fatalf("kept %d of 300 forged requests sent in %.0fs; want at least 1 and at most the log budget (20/s)", flood, seconds)
	}
	t.Logf("flood: kept %d of 300 in %.0fs", flood, seconds)
}
