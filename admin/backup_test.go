package admin

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/store"
	"github.com/batchhook/batchhook/submit"
)

// watchedStore tells when a Backup returned, and with what.
type watchedStore struct {
	*store.Store
	done chan error
}

func (w watchedStore) Backup(ctx context.Context, out io.Writer, size func(int64)) (int64, error) {
	n, err := w.Store.Backup(ctx, out, size)
	w.done <- err
	return n, err
}

// backupServer serves the admin API over a store holding records raw
// bodies of rawSize bytes, with the given stall bound.
func backupServer(t *testing.T, records, rawSize int, stall time.Duration) (*httptest.Server, watchedStore) {
	t.Helper()
	st, err := store.Open(t.TempDir(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for i := 0; i < records; i++ {
		raw := bytes.Repeat([]byte{'a' + byte(i%26)}, rawSize)
		n := store.Notification{Event: "batch.completed", BatchID: fmt.Sprintf("b%03d", i), Status: "completed",
			ReceivedAt: time.Unix(1_790_000_000, 0).UTC(), Source: store.SourceWebhook, Raw: raw, Attempt: 1}
		if _, err := st.Record(n); err != nil {
			t.Fatal(err)
		}
	}
	svc, err := submit.NewService(submit.ServiceOptions{Store: st, Logger: zerolog.Nop(),
		Rule: submit.ResubmitRule{Field: "result", Values: []string{"pending"}, CPFField: "cpf"},
		Results: func(b store.Batch) (io.ReadCloser, error) {
			return os.Open(filepath.Join(b.ExportPath, "results.ndjson"))
		}})
	if err != nil {
		t.Fatal(err)
	}
	ws := watchedStore{Store: st, done: make(chan error, 4)}
	s, err := New(Options{Store: ws, Token: func() []byte { return []byte("tok") }, Submissions: svc, MaxSubmissionBytes: 4096,
		Retention: time.Hour, Metrics: http.NotFoundHandler(), Ready: func() error { return nil }, Logger: zerolog.Nop(),
		BackupStall: stall, Now: func() time.Time { return time.Date(2026, 11, 24, 16, 30, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv, ws
}

func TestBackupStreamsACheckableDatabase(t *testing.T) {
	srv, ws := backupServer(t, 50, 2000, time.Second)
	if code, _ := call(t, http.MethodGet, srv.URL+"/admin/backup"); code != http.StatusUnauthorized {
		t.Fatalf("backup without the token: %d, want 401", code)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/admin/backup", nil)
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("backup: %d %v", resp.StatusCode, err)
	}
	if err := <-ws.done; err != nil {
		t.Fatalf("store Backup: %v", err)
	}
	h := resp.Header
	if h.Get("Content-Type") != "application/octet-stream" || h.Get("Content-Disposition") != `attachment; filename="batchhook-20261124T163000Z.db"` ||
		h.Get("Content-Length") != strconv.Itoa(len(body)) || h.Get("Cache-Control") != "no-store" {
		t.Fatalf("backup headers %v (body %d bytes)", h, len(body))
	}
	path := filepath.Join(t.TempDir(), "b.db")
	if err := os.WriteFile(path, body, 0o600); err != nil {
		t.Fatal(err)
	}
	sum, err := store.Check(path)
	if err != nil || sum.Keys("batches") != 50 {
		t.Fatalf("the streamed backup: %v, %v", sum.Buckets, err)
	}
}

// rawGet sends GET /admin/backup on a bare connection and reads only the
// status line.
func rawGet(t *testing.T, srv *httptest.Server) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "GET /admin/backup HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok\r\n\r\n")
	line := make([]byte, 15)
	if _, err := io.ReadFull(conn, line); err != nil || string(line) != "HTTP/1.1 200 OK" {
		t.Fatalf("status line %q: %v", line, err)
	}
	return conn
}

// The database here (24 MB, in few records: each costs its own commit)
// is far more than loopback's socket buffers hold (4 MiB to send, a few
// MiB to receive while nothing reads), so the server's writes block on a
// client that does not read.
func TestBackupEndsWhenTheClientStallsOrGoes(t *testing.T) {
	srv, ws := backupServer(t, 6, 4<<20, 300*time.Millisecond)
	rawGet(t, srv) // stalls: reads nothing more
	select {
	case err := <-ws.done:
		if err == nil || !strings.Contains(err.Error(), "send backup") {
			t.Fatalf("Backup to a stalled client = %v, want a send error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Backup still streaming to a client that stopped reading 10s ago")
	}
	conn := rawGet(t, srv)
	conn.Close() // goes away
	select {
	case err := <-ws.done:
		if err == nil {
			t.Fatal("Backup to a client that went away returned nil")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Backup still streaming to a client that went away 10s ago")
	}
}
