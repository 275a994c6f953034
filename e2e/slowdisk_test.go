package e2e

// A slow disk, with strace delaying every fdatasync of the real binary: a
// webhook reply waits only for the commit it depends on, and every sender
// gets a reply (2xx once durable, or 503) before the listener's write
// deadline.

import (
	"bytes"
	"fmt"
	"net/http"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/batchhook/batchhook/internal/signature"
	"github.com/batchhook/batchhook/receiver"
)

const payPath = "/webhooks/payments"

// timedReply is one webhook attempt: its reply, and how long it took from
// the request's start to the whole reply.
type timedReply struct {
	name   string
	code   int
	result string
	took   time.Duration
	err    error
}

// postTimed posts body signed with secret to path and times the reply.
func postTimed(addr, path, secret, name string, body []byte) timedReply {
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(signature.Header, signature.Sign([]byte(secret), body))
	req.Header.Set("X-Service-Event", "transaction.paid")
	req.Header.Set("X-Service-Attempt", "1")
	client := &http.Client{Timeout: 30 * time.Second}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return timedReply{name: name, took: time.Since(start), err: err}
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, err = buf.ReadFrom(resp.Body)
	r := timedReply{name: name, code: resp.StatusCode, took: time.Since(start), err: err}
	if m := regexp.MustCompile(`"(result|error)":"([^"]*)"`).FindStringSubmatch(buf.String()); m != nil {
		r.result = m[2]
	}
	return r
}

// TestRepliesUnderSlowDisk: every fdatasync takes 2 s, so each commit takes
// about 4 s (bbolt syncs the data pages, then the meta page). New payment
// events and batch.completed notifications arrive together; a commit that
// cannot return in time is answered 503 before the write deadline and goes
// on in the background. Duplicates of records that are already durable,
// sent while a commit is syncing, answer at once: they depend on no commit
// under way. Once the disk is fast again the senders' retries are answered
// 200, and every event is logged (and written to the day file) once.
func TestRepliesUnderSlowDisk(t *testing.T) {
	const (
		delay   = 2 * time.Second
		events  = 8
		batches = 4
	)
	writeDeadline := receiver.DefaultLimits().WriteTimeout
	s, d := paymentsSetup(t)
	payKnown, batchKnown := paymentBody("slow-known"), completedBody("b_slow_known")
	if r := postTimed(s.addr, payPath, e2ePaySecret, "payment slow-known", payKnown); r.code != 200 || r.result != "accepted" {
		t.Fatalf("%+v, want 200 accepted", r)
	}
	if r := postTimed(s.addr, e2ePath, e2eSecret, "batch b_slow_known", batchKnown); r.code != 200 || r.result != "accepted" {
		t.Fatalf("%+v, want 200 accepted", r)
	}
	// The file sink has recorded its delivery: the commits traced below
	// are the test's, and the dispatcher's for them.
	waitLog(t, d, paymentDelivered(1), 20*time.Second, "seq 1 delivered to file")

	tr := attachStrace(t, d.cmd.Process.Pid, fmt.Sprintf("fdatasync:delay_enter=%d", delay.Microseconds()))
	replies := make(chan timedReply, events+batches)
	var wg sync.WaitGroup
	for i := range events {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("slow-%d", i)
			replies <- postTimed(s.addr, payPath, e2ePaySecret, "payment "+name, paymentBody(name))
		}()
	}
	for i := range batches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("b_slow_%d", i)
			replies <- postTimed(s.addr, e2ePath, e2eSecret, "batch "+id, completedBody(id))
		}()
	}
	// A commit has written its meta page: readers see it while its
	// fdatasync runs. The durable records do not depend on it.
	if _, ok := tr.wait(metaWrite, 20*time.Second); !ok {
		t.Fatalf("no meta page write traced:\n%s", tr.text())
	}
	for range 2 {
		for _, r := range []timedReply{
			postTimed(s.addr, payPath, e2ePaySecret, "payment slow-known again", payKnown),
			postTimed(s.addr, e2ePath, e2eSecret, "batch b_slow_known again", batchKnown),
		} {
			if r.err != nil || r.code != 200 || r.result != "duplicate" {
				t.Fatalf("%s: %+v, want 200 duplicate", r.name, r)
			}
			if r.took >= delay/2 {
				t.Errorf("%s: duplicate answered after %s, with its record durable since before the disk slowed: "+
					"it waited for a commit it does not depend on", r.name, r.took)
			}
		}
	}
	wg.Wait()
	close(replies)
	for r := range replies {
		switch {
		case r.err != nil:
			t.Errorf("%s: no reply after %s (%v); the listener's write deadline is %s", r.name, r.took, r.err, writeDeadline)
		case r.took >= writeDeadline:
			t.Errorf("%s: %d %s after %s, past the write deadline (%s)", r.name, r.code, r.result, r.took, writeDeadline)
		case r.code != 200 && r.code != 503:
			t.Errorf("%s: %d %s, want 200 or 503", r.name, r.code, r.result)
		default:
			t.Logf("%s: %d %s after %s", r.name, r.code, r.result, r.took.Round(time.Millisecond))
		}
	}
	tr.detach()
	if t.Failed() {
		t.FailNow()
	}

	// The disk is fast again: every sender's retry is answered 200.
	for i := range events {
		name := fmt.Sprintf("slow-%d", i)
		if r := postTimed(s.addr, payPath, e2ePaySecret, "payment "+name, paymentBody(name)); r.code != 200 {
			t.Fatalf("retry of %s: %+v, want 200", r.name, r)
		}
	}
	for i := range batches {
		id := fmt.Sprintf("b_slow_%d", i)
		if r := postTimed(s.addr, e2ePath, e2eSecret, "batch "+id, completedBody(id)); r.code != 200 {
			t.Fatalf("retry of %s: %+v, want 200", r.name, r)
		}
	}
	// Each event is logged once: the day file holds events+1 lines, one
	// per transaction.
	deadline := time.Now().Add(30 * time.Second)
	for len(readDayFiles(t, s.exports)) < events+1 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	seen := map[string]int{}
	lines := readDayFiles(t, s.exports)
	for _, l := range lines {
		seen[string(regexp.MustCompile(`"id":"([^"]*)"`).FindSubmatch(l.Body)[1])]++
	}
	if len(lines) != events+1 || len(seen) != events+1 {
		t.Fatalf("day files hold %d lines for %d transactions %v, want %d, each once", len(lines), len(seen), seen, events+1)
	}
	d.stop(t)
}

// TestCommitPastTheDeadlineIs503AndGoesOn: every fdatasync takes 6 s, so
// no commit can return before the write deadline. Each new event is
// answered 503 `storage_slow` in time (and logged webhook_store_slow); its
// commit goes on, so once the disk is fast again the sender's retry is a
// `duplicate` of the event logged once.
func TestCommitPastTheDeadlineIs503AndGoesOn(t *testing.T) {
	const (
		delay  = 6 * time.Second
		events = 3
	)
	writeDeadline := receiver.DefaultLimits().WriteTimeout
	s, d := paymentsSetup(t)
	tr := attachStrace(t, d.cmd.Process.Pid, fmt.Sprintf("fdatasync:delay_enter=%d", delay.Microseconds()))
	replies := make(chan timedReply, events+1)
	var wg sync.WaitGroup
	for i := range events {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("late-%d", i)
			replies <- postTimed(s.addr, payPath, e2ePaySecret, "payment "+name, paymentBody(name))
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		replies <- postTimed(s.addr, e2ePath, e2eSecret, "batch b_late", completedBody("b_late"))
	}()
	wg.Wait()
	close(replies)
	for r := range replies {
		if r.err != nil || r.code != 503 || r.result != "storage_slow" || r.took >= writeDeadline {
			t.Errorf("%s: %+v, want 503 storage_slow before the write deadline (%s)", r.name, r, writeDeadline)
		}
	}
	if !regexp.MustCompile(`"event":"webhook_store_slow"`).MatchString(d.out.String()) {
		t.Errorf("no webhook_store_slow logged:\n%s", d.out.String())
	}
	tr.detach()
	if t.Failed() {
		t.FailNow()
	}
	// The commits went on: the retries find them (waiting, if need be, for
	// the one under way).
	for i := range events {
		name := fmt.Sprintf("late-%d", i)
		if r := postTimed(s.addr, payPath, e2ePaySecret, "payment "+name, paymentBody(name)); r.code != 200 || r.result != "duplicate" {
			t.Fatalf("retry of %s: %+v, want 200 duplicate (its commit went on)", r.name, r)
		}
	}
	if r := postTimed(s.addr, e2ePath, e2eSecret, "batch b_late", completedBody("b_late")); r.code != 200 || r.result != "duplicate" {
		t.Fatalf("retry of %s: %+v, want 200 duplicate (its commit went on)", r.name, r)
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(readDayFiles(t, s.exports)) < events && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if lines := readDayFiles(t, s.exports); len(lines) != events {
		t.Fatalf("day files hold %d lines, want %d (each event once)", len(lines), events)
	}
	d.stop(t)
}
