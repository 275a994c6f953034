package kafkasink

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/batchhook/batchhook/sink"
)

const topic = "batchhook.results"

// newCluster starts an in-process Kafka (franz-go's kfake: the real
// protocol, transactions included) with topic in partitions partitions.
func newCluster(t *testing.T, partitions int32, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(partitions, topic)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// fast shortens franz-go's timers so that a refusal shows in a test's
// time; the defaults suit production.
var fast = []kgo.Opt{kgo.MetadataMinAge(50 * time.Millisecond), kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond })}

// newTestSink makes a sink on c with a transactional id of its own.
func newTestSink(t *testing.T, brokers []string, o Options) *Sink {
	t.Helper()
	o.Brokers = brokers
	if o.TransactionalID == "" {
		o.TransactionalID = "batchhook-test-" + t.Name()
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
	s, err := newSink(o, fast...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// testExport writes an export of n items under a temp dir. Each item is a
// distinct compact JSON object; the manifest is indented, as export writes
// it, so the sink's compaction shows.
func testExport(t *testing.T, id string, n int) (sink.Export, [][]byte) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	var lines [][]byte
	var all bytes.Buffer
	for i := range n {
		l := fmt.Appendf(nil, `{"cpf":"%011d","status":"found","batch":%q,"n":%d}`, 10000000000+i, id, i)
		lines = append(lines, l)
		all.Write(l)
		all.WriteByte('\n')
	}
	manifest := fmt.Appendf(nil, "{\n  \"batch_id\": %q,\n  \"items\": %d\n}\n", id, n)
	if err := os.WriteFile(filepath.Join(dir, "results.ndjson"), all.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return sink.Export{
		BatchID: id, Status: "completed", Dir: dir, Manifest: manifest, Items: int64(n),
		ExportedAt: time.Now().UTC(),
		OpenItems:  func() (io.ReadCloser, error) { return os.Open(filepath.Join(dir, "results.ndjson")) },
	}, lines
}

// consume reads topic from the start with the given isolation level until
// until says it has enough or the timeout passes; it returns every record
// read. extra adds client options (SASL).
func consume(t *testing.T, brokers []string, level kgo.IsolationLevel, timeout time.Duration, until func([]*kgo.Record) bool, extra ...kgo.Opt) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(level),
		kgo.FetchMaxWait(100 * time.Millisecond)}, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var got []*kgo.Record
	for !until(got) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		for _, e := range fs.Errors() {
			t.Fatalf("fetch %s/%d: %v", e.Topic, e.Partition, e.Err)
		}
		got = append(got, fs.Records()...)
	}
	return got
}

// manifests counts the manifest records of id.
func manifests(rs []*kgo.Record, id string) int {
	n := 0
	for _, r := range rs {
		if string(r.Key) == id && header(r, HeaderKind) == KindManifest {
			n++
		}
	}
	return n
}

// header returns the value of r's header k ("" when absent).
func header(r *kgo.Record, k string) string {
	for _, h := range r.Headers {
		if h.Key == k {
			return string(h.Value)
		}
	}
	return ""
}

// nopProgress: the kafka sink delivers a batch as one unit.
type nopProgress struct{}

func (nopProgress) Done() int      { return 0 }
func (nopProgress) Mark(int) error { return nil }

// writeResults replaces e's results.ndjson.
func writeResults(t *testing.T, e sink.Export, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(e.Dir, "results.ndjson"), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
