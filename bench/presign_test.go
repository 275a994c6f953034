package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/batchhook/batchhook/internal/signature"
)

// presign runs bench/presign.sh (Perl's HMAC, not batchhook's) and returns
// its lines; the test is skipped where Perl's Digest::SHA is missing, as
// compare.sh then falls back to the built-in generator.
func presign(t *testing.T, secretFile string, n int, run string) []string {
	t.Helper()
	if err := exec.Command("perl", "-MDigest::SHA", "-e", "1").Run(); err != nil {
		t.Skipf("perl with Digest::SHA not available: %v", err)
	}
	out, err := exec.Command("bash", "presign.sh", secretFile, fmt.Sprint(n), run).Output()
	if err != nil {
		t.Fatalf("presign.sh: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != n {
		t.Fatalf("presign.sh wrote %d lines, want %d", len(lines), n)
	}
	return lines
}

func splitLine(t *testing.T, line string) (sig string, body []byte) {
	t.Helper()
	sig, b, ok := strings.Cut(line, "\t")
	if !ok {
		t.Fatalf("line without a tab: %q", line)
	}
	return sig, []byte(b)
}

// TestPresignedRequestsVerify: every request the outside generator signs is
// accepted by batchhook's verifier (the daemon and wrk's requests agree on
// the scheme), with the secret file read as the daemon reads it (one final
// line ending dropped); ids are unique, lines of one length (wrk.lua seeks by
// it), and the "forged" signature wrk.lua uses (the next line's) is refused.
func TestPresignedRequestsVerify(t *testing.T) {
	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, []byte("s3cr3t key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	secret := []byte("s3cr3t key")
	lines := presign(t, secretFile, 500, "t1")
	ids := map[string]bool{}
	for i, line := range lines {
		if len(line) != len(lines[0]) {
			t.Fatalf("line %d is %d bytes, line 0 %d: wrk.lua seeks by a fixed width", i, len(line), len(lines[0]))
		}
		sig, body := splitLine(t, line)
		if r := signature.Verify(secret, body, sig); r != signature.OK {
			t.Fatalf("line %d: batchhook's verifier says %q (%s) for %q", i, r, r.Explain(), line)
		}
		var n struct {
			Event   string `json:"event"`
			BatchID string `json:"batch_id"`
		}
		if err := json.Unmarshal(body, &n); err != nil || n.Event != "batch.completed" || n.BatchID == "" {
			t.Fatalf("line %d: body %s: %v", i, body, err)
		}
		if ids[n.BatchID] {
			t.Fatalf("line %d repeats batch id %s", i, n.BatchID)
		}
		ids[n.BatchID] = true
		nextSig, _ := splitLine(t, lines[(i+1)%len(lines)])
		if signature.Verify(secret, body, nextSig) == signature.OK {
			t.Fatalf("line %d: the forged (next line's) signature verifies", i)
		}
	}
}

// TestWrkScriptSendsEachThreadItsOwnSlice runs wrk with bench/wrk.lua
// against a loopback server that checks every request: in unique mode all
// bodies come from lines START..START+COUNT-1, every one of them is sent
// (each thread covers its own slice) and every signature verifies; in forged
// mode none does.
func TestWrkScriptSendsEachThreadItsOwnSlice(t *testing.T) {
	if _, err := exec.LookPath("wrk"); err != nil {
		t.Skip("wrk not installed")
	}
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "secret")
	if err := os.WriteFile(secretFile, []byte("k"), 0o600); err != nil {
		t.Fatal(err)
	}
	lines := presign(t, secretFile, 400, "t2")
	reqFile := filepath.Join(dir, "requests.tsv")
	if err := os.WriteFile(reqFile, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	line := map[string]int{}
	for i, l := range lines {
		_, body := splitLine(t, l)
		line[string(body)] = i
	}
	var (
		mu           sync.Mutex
		seen         map[int]bool
		valid, wrong int
		outside      []int
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 4096))
		ok := signature.Verify([]byte("k"), body, r.Header.Get(signature.Header)) == signature.OK
		mu.Lock()
		defer mu.Unlock()
		i, known := line[string(body)]
		switch {
		case !known || i < 100 || i >= 300:
			outside = append(outside, i)
		case ok:
			valid++
			seen[i] = true
		default:
			wrong++
			seen[i] = true
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	for _, mode := range []string{"unique", "forged"} {
		mu.Lock() // a reply of the previous run may still be in its handler
		seen, valid, wrong, outside = map[int]bool{}, 0, 0, nil
		mu.Unlock()
		out, err := exec.Command("wrk", "-t", "2", "-c", "4", "-d", "1s", "-s", "wrk.lua", srv.URL+"/hook", "--", reqFile, "100", "200", "2", mode).CombinedOutput()
		if err != nil {
			t.Fatalf("wrk %s: %v\n%s", mode, err, out)
		}
		result := regexp.MustCompile(`RESULT requests=(\d+) .* wrapped=(\d+)`).FindSubmatch(out)
		if result == nil {
			t.Fatalf("wrk %s printed no RESULT line:\n%s", mode, out)
		}
		if requests, wrapped := string(result[1]), string(result[2]); len(requests) > 3 && wrapped == "0" {
			t.Errorf("%s: %s requests from 200 lines, yet wrapped=0", mode, requests)
		}
		mu.Lock()
		if len(outside) > 0 {
			t.Errorf("%s: %d requests outside lines 100..299 (first: line %d)", mode, len(outside), outside[0])
		}
		if len(seen) != 200 {
			t.Errorf("%s: %d distinct lines sent, want all 200 of the region (RESULT %s)", mode, len(seen), bytes.TrimSpace(result[0]))
		}
		if mode == "unique" && (valid == 0 || wrong != 0) {
			t.Errorf("unique: %d verified, %d refused; want all verified", valid, wrong)
		}
		if mode == "forged" && (wrong == 0 || valid != 0) {
			t.Errorf("forged: %d verified, %d refused; want all refused", valid, wrong)
		}
		mu.Unlock()
	}
}
