package execsink

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/batchhook/batchhook/sink"
)

// TestREADMEExample runs docs/sinks.md's example command through the sink:
// it must do what docs/sinks.md says it does.
func TestREADMEExample(t *testing.T) {
	cmd := script(t, "load-results.sh")
	target := filepath.Join(t.TempDir(), "results")
	s := newSink(t, Options{Command: []string{cmd, "--target", target}, Timeout: 30 * time.Second})
	e := export(t)
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(e.Dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("manifest.json", `{"batch_id":"b_7Kq2","items":1}`)
	write("results.ndjson", "{\"cpf\":\"52998224725\"}\n")

	// The destination is not there yet: exit 75, try again later.
	wantResult(t, s.Deliver(context.Background(), e, nil), sink.Retry, "exit", "exit status 75 (EX_TEMPFAIL)")

	if err := os.Mkdir(target, 0o700); err != nil {
		t.Fatal(err)
	}
	check := func() {
		t.Helper()
		for _, name := range []string{"manifest.json", "results.ndjson"} {
			want, _ := os.ReadFile(filepath.Join(e.Dir, name))
			got, err := os.ReadFile(filepath.Join(target, e.BatchID, name))
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s: copy %q (%v), export %q", name, got, err, want)
			}
		}
		entries, _ := os.ReadDir(target)
		if len(entries) != 1 {
			t.Errorf("target holds %d entries, want only the batch's directory", len(entries))
		}
	}
	wantResult(t, s.Deliver(context.Background(), e, nil), sink.Delivered, "", "")
	check()
	// Run again after a refetch replaced the export: the copy is replaced.
	write("results.ndjson", "{\"cpf\":\"11144477735\"}\n")
	wantResult(t, s.Deliver(context.Background(), e, nil), sink.Delivered, "", "")
	check()

	// A configuration mistake is refused for good.
	bad := newSink(t, Options{Command: []string{cmd, "--tagret", target}})
	wantResult(t, bad.Deliver(context.Background(), e, nil), sink.Failed, "exit", "exit status 64")
}

// TestREADMEExampleIsTheTestedOne keeps the script docs/sinks.md shows
// under "exec sink" and the tested copy the same.
func TestREADMEExampleIsTheTestedOne(t *testing.T) {
	script, err := os.ReadFile("testdata/load-results.sh")
	if err != nil {
		t.Fatal(err)
	}
	head := script[:bytes.IndexByte(script, '\n')+1]
	head = append(head, "# /usr/local/bin/load-results"...)
	found := false
	for _, p := range []string{"../../docs/sinks.md"} {
		doc, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		i := bytes.Index(doc, head)
		if i < 0 {
			continue
		}
		found = true
		block := doc[i:]
		block = block[:bytes.Index(block, []byte("```"))]
		if !bytes.Equal(block, script) {
			t.Errorf("%s: the example script differs from testdata/load-results.sh", p)
		}
	}
	if !found {
		t.Fatal("docs/sinks.md no longer shows the example script testdata/load-results.sh")
	}
}
