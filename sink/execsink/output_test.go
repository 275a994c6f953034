package execsink

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/sink"
)

func TestHugeOutputIsCappedAndDrained(t *testing.T) {
	var logs bytes.Buffer
	s := newSink(t, Options{Command: []string{script(t, "loud.sh")}, Timeout: time.Minute,
		LogOutput: true, Logger: zerolog.New(&logs)})
	e := export(t)

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got := s.Deliver(context.Background(), e, nil)
	runtime.ReadMemStats(&after)

	// Delivered, not a timeout: the command was never blocked on a full pipe.
	wantResult(t, got, sink.Delivered, "", "")
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Errorf("Deliver allocated %d bytes for 100 MB of output", alloc)
	}
	lines := logLines(t, logs.Bytes())
	if len(lines) != 1 {
		t.Fatalf("want one log line, got %d: %.500s", len(lines), logs.String())
	}
	l := lines[0]
	if l["event"] != "sink_exec_output" || l["sink"] != "exec" || l["batch_id"] != e.BatchID ||
		l["truncated"] != true || l["level"] != "info" {
		t.Errorf("log line = %.500v", l)
	}
	if n, _ := l["output_bytes"].(float64); n != float64(104857600+len("first line on stderr\n")) {
		t.Errorf("output_bytes = %v", l["output_bytes"])
	}
	output, _ := l["output"].(string)
	want := "first line on stderr\n" + strings.Repeat("x", OutputLimit-len("first line on stderr\n"))
	if output != want {
		t.Errorf("output: %d bytes, starting %.40q; want stderr's line then x up to %d bytes", len(output), output, OutputLimit)
	}
}

func TestOutputDiscardedByDefault(t *testing.T) {
	var logs bytes.Buffer
	s := newSink(t, Options{Command: []string{script(t, "exit.sh"), "1"}, Logger: zerolog.New(&logs)})
	wantResult(t, s.Deliver(context.Background(), export(t), nil), sink.Failed, "exit", "exit status 1")
	if logs.Len() != 0 {
		t.Errorf("logged without LogOutput: %s", logs.String())
	}
}

func TestShortOutputIsNotTruncated(t *testing.T) {
	var logs bytes.Buffer
	s := newSink(t, Options{Command: []string{script(t, "exit.sh"), "0"}, LogOutput: true, Logger: zerolog.New(&logs)})
	wantResult(t, s.Deliver(context.Background(), export(t), nil), sink.Delivered, "", "")
	lines := logLines(t, logs.Bytes())
	if len(lines) != 1 || lines[0]["truncated"] != false {
		t.Fatalf("log = %s", logs.String())
	}
	out, _ := lines[0]["output"].(string)
	// stdout and stderr share one pipe, in the order written.
	if out != "personal data 529.982.247-25\nmore on stderr\n" {
		t.Errorf("output = %q", out)
	}
}

func TestCapture(t *testing.T) {
	c := newCapture(4)
	for _, p := range []string{"ab", "cde", "", "fghij"} {
		if n, err := c.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", p, n, err)
		}
	}
	if string(c.buf) != "abcd" || c.total != 10 || !c.truncated() || cap(c.buf) != 4 {
		t.Errorf("buf %q total %d truncated %v cap %d", c.buf, c.total, c.truncated(), cap(c.buf))
	}
	c = newCapture(4)
	_, _ = c.Write([]byte("abcd"))
	if c.truncated() {
		t.Error("exactly the limit is not truncated")
	}
}
