package e2e

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batchhook/batchhook/internal/signature"
	"github.com/batchhook/batchhook/lookupsim"
)

const crashPaySecret = "payments e2e secret"

// postPaymentQuiet posts one payment webhook signed with secret; status 0 when
// the daemon was not there.
func postPaymentQuiet(addr, secret string, body []byte, attempt int) (int, map[string]any) {
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/webhooks/payments", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(signature.Header, signature.Sign([]byte(secret), body))
	req.Header.Set("X-Service-Event", "transaction.paid")
	req.Header.Set("X-Service-Attempt", fmt.Sprint(attempt))
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	out := map[string]any{}
	raw, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out
}

// dayFiles lists the payments day files under root in name order. A
// rewrite's temporary copy (".tmp-<day>.ndjson", which the glob's "*"
// also matches) is not one: counting it sees lines the day file may not
// hold.
func dayFiles(root string) []string {
	names, _ := filepath.Glob(filepath.Join(root, "payments", "*.ndjson"))
	out := names[:0]
	for _, name := range names {
		if !strings.HasPrefix(filepath.Base(name), ".") {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// dayFileLines counts the complete lines of every payments day file
// under root.
func dayFileLines(root string) int {
	names := dayFiles(root)
	n := 0
	for _, name := range names {
		data, _ := os.ReadFile(name)
		n += bytes.Count(data, []byte("\n"))
	}
	return n
}

type payLine struct {
	Seq        uint64          `json:"seq"`
	ReceivedAt time.Time       `json:"received_at"`
	Event      string          `json:"event"`
	Attempt    int             `json:"attempt"`
	BodySHA256 string          `json:"body_sha256"`
	Body       json.RawMessage `json:"body"`
}

// readDayFiles reads every payments day file under root, in name order.
func readDayFiles(t *testing.T, root string) []payLine {
	t.Helper()
	names := dayFiles(root)
	var out []payLine
	for _, name := range names {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var l payLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Fatalf("%s: a line that is not JSON (%v): a torn write survived", name, err)
			}
			out = append(out, l)
		}
		f.Close()
	}
	return out
}

// TestPaymentDayFileAfterKillsBetweenAckAndDelivery SIGKILLs the daemon
// right after it acknowledged a payment event (before or after its line
// reached the day file) and checks that, after restarts, every
// acknowledged event is in the day file exactly once, in seq order, with
// its body's sha256 and compacted body.
func TestPaymentDayFileAfterKillsBetweenAckAndDelivery(t *testing.T) {
	t.Parallel()
	s := newSetup(t, lookupsim.Options{})
	s.env["BATCHHOOK_PAYMENTS_SIGNING_SECRET"] = crashPaySecret
	s.env["BATCHHOOK_LOG_LEVEL"] = "info"
	d := startDaemon(t, s.addr, s.env)
	const events = 60
	bodies := map[string][]byte{} // body sha256 → raw
	seqs := map[uint64]string{}
	kills := 0
	for i := 0; i < events; i++ {
		// Odd spacing and key order: the day file must keep the body's
		// content (compacted), its sha256 the raw bytes'.
		raw := []byte(fmt.Sprintf("{ \"transaction\": {\"status\":\"paid\", \"id\": \"tx-%03d\",\n\"updated_at\":\"2026-11-24T12:00:%02d+0000\"}, \"n\" : %d }", i, i%60, i))
		sum := sha256.Sum256(raw)
		bodies[hex.EncodeToString(sum[:])] = raw
		var seq uint64
		for attempt := 1; ; attempt++ {
			code, reply := postPaymentQuiet(s.addr, crashPaySecret, raw, attempt)
			if code == http.StatusOK {
				seq = uint64(reply["seq"].(float64))
				break
			}
			if attempt > 200 {
				t.Fatalf("event %d never acknowledged (last status %d)", i, code)
			}
			time.Sleep(20 * time.Millisecond)
		}
		seqs[seq] = hex.EncodeToString(sum[:])
		if i%7 == 3 { // kill at once after the ack: the line may or may not be written
			d.cmd.Process.Signal(syscall.SIGKILL)
			<-d.done
			d.done <- nil
			kills++
			d = startDaemon(t, s.addr, s.env)
		}
	}
	// Complete lines only while the daemon writes: a file read during an
	// append, or torn by a kill before the next daemon repairs it, may end
	// in part of a line. readDayFiles judges the files once it has stopped.
	waitFor(t, func() bool { return dayFileLines(s.exports) >= events })
	// Replays after the fact change nothing.
	for sum, raw := range bodies {
		if code, reply := postPaymentQuiet(s.addr, crashPaySecret, raw, 9); code != 200 || reply["result"] != "duplicate" {
			t.Fatalf("replay of %s: %d %v, want 200 duplicate", sum[:8], code, reply)
		}
	}
	time.Sleep(300 * time.Millisecond)
	d.stop(t)
	lines := readDayFiles(t, s.exports)
	if len(lines) != events {
		t.Fatalf("day files hold %d lines for %d acknowledged events", len(lines), events)
	}
	seen := map[uint64]bool{}
	var last uint64
	for _, l := range lines {
		if seen[l.Seq] {
			t.Fatalf("seq %d written twice", l.Seq)
		}
		seen[l.Seq] = true
		if l.Seq <= last {
			t.Fatalf("seq %d after %d: out of order", l.Seq, last)
		}
		last = l.Seq
		want, ok := seqs[l.Seq]
		if !ok || l.BodySHA256 != want {
			t.Fatalf("line seq %d: body_sha256 %s, want %s", l.Seq, l.BodySHA256, want)
		}
		var compact bytes.Buffer
		_ = json.Compact(&compact, bodies[want])
		if !bytes.Equal(l.Body, compact.Bytes()) {
			t.Fatalf("line seq %d: body %s, want the compacted body %s", l.Seq, l.Body, compact.Bytes())
		}
		if l.Event != "transaction.paid" || l.Attempt < 1 {
			t.Fatalf("line seq %d: event %q attempt %d", l.Seq, l.Event, l.Attempt)
		}
	}
	if kills < 5 {
		t.Fatalf("only %d kills", kills)
	}
	if !strings.Contains(d.out.String(), `"event":"payment_duplicate"`) {
		t.Fatalf("no payment_duplicate line for the replays")
	}
}
