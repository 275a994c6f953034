package natssink_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/batchhook/batchhook/sink"
)

var exportedAt = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

// startServer runs a real nats-server with JetStream on a temp dir,
// listening on a random loopback port. edit may change its options.
func startServer(t *testing.T, edit func(*server.Options)) *server.Server {
	t.Helper()
	o := &server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true}
	if edit != nil {
		edit(o)
	}
	s, err := server.NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	t.Cleanup(s.Shutdown)
	return s
}

// addStream creates the stream of the subject the way an operator would.
func addStream(t *testing.T, url, subject string, dup time.Duration) jetstream.Stream {
	t.Helper()
	js := jsOf(t, url)
	st, err := js.CreateStream(context.Background(), jetstream.StreamConfig{
		Name: "RESULTS", Subjects: []string{subject}, Storage: jetstream.FileStorage, Duplicates: dup,
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func jsOf(t *testing.T, url string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// stored is one message of the stream.
type stored struct {
	id, batch, kind, index string
	data                   []byte
}

// readStream returns every message the stream holds, in order.
func readStream(t *testing.T, st jetstream.Stream) []stored {
	t.Helper()
	ctx := context.Background()
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []stored
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("get %d: %v", seq, err)
		}
		out = append(out, stored{
			id: m.Header.Get("Nats-Msg-Id"), batch: m.Header.Get("Batchhook-Batch-Id"),
			kind: m.Header.Get("Batchhook-Kind"), index: m.Header.Get("Batchhook-Index"), data: m.Data,
		})
	}
	return out
}

type progress struct {
	mu       sync.Mutex
	done     int
	marks    []int
	failMark bool
}

func (p *progress) Done() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

func (p *progress) Mark(n int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.marks = append(p.marks, n)
	if p.failMark {
		return errors.New("bbolt: disk full")
	}
	p.done = n
	return nil
}

func (p *progress) recorded() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int(nil), p.marks...)
}

// cpfItem looks like a provider result: a Reason that leaked it would
// show its CPF.
func cpfItem(i int) string {
	return fmt.Sprintf(`{"cpf":"529.982.%03d-%02d","index":%d,"found":true}`, i%1000, i%100, i)
}

func cpfItems(n int) []string {
	items := make([]string, n)
	for i := range items {
		items[i] = cpfItem(i)
	}
	return items
}

func writeExport(t *testing.T, batchID string, items []string, version int) sink.Export {
	t.Helper()
	dir := t.TempDir()
	var results bytes.Buffer
	for _, it := range items {
		results.WriteString(it + "\n")
	}
	manifest := []byte(fmt.Sprintf("{\n  \"batch_id\": %q,\n  \"items\": %d\n}\n", batchID, len(items)))
	if err := os.WriteFile(filepath.Join(dir, "results.ndjson"), results.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return sink.Export{
		BatchID: batchID, Status: "completed", Dir: dir, Manifest: manifest,
		Items: int64(len(items)), ExportedAt: exportedAt, Version: version,
		OpenItems: func() (io.ReadCloser, error) { return os.Open(filepath.Join(dir, "results.ndjson")) },
	}
}
