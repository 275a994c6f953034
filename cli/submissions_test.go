package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/store"
)

// TestSubmissionsShowMarksPurgedChunks: a failed or submit_unknown chunk
// whose CPFs the purger deleted after RECORD_RETENTION says so on its line,
// in `submissions show` and `submissions unknown`, and is not offered for
// a resend; a failed chunk within retention has no such note.
func TestSubmissionsShowMarksPurgedChunks(t *testing.T) {
	base, st := adminOver(t)
	now := time.Now()
	old := now.Add(-72 * time.Hour)
	if _, err := st.AddSubmission(store.Submission{ID: "s_old"}, [][]string{{"52998224725"}, {"11144477735"}, {"12345678909"}}, old); err != nil {
		t.Fatal(err)
	}
	ends := []struct {
		state store.ChunkState
		at    time.Time
	}{{store.ChunkFailed, old}, {store.ChunkUnknown, old}, {store.ChunkFailed, now}}
	for i, end := range ends {
		c, err := st.NextChunk()
		if err != nil || c == nil || c.Index != i {
			t.Fatalf("next chunk = %+v %v, want chunk %d", c, err, i)
		}
		if err := st.ChunkSending(c.Seq, c.Index, end.at); err != nil {
			t.Fatal(err)
		}
		if err := st.ChunkGiveUp(c.Seq, c.Index, end.state, "HTTP 422: invalid batch", end.at); err != nil {
			t.Fatal(err)
		}
	}
	if n, _, err := st.PurgeChunkCPFs(now.Add(-24*time.Hour), "", 100); err != nil || n != 2 {
		t.Fatalf("PurgeChunkCPFs = %d %v, want 2", n, err)
	}
	run := func(args ...string) (string, string, int) {
		var out, errOut bytes.Buffer
		code := submissionsCmd(context.Background(), append(args, "--admin", base), Env{Stdout: &out, Stderr: &errOut})
		return out.String(), errOut.String(), code
	}
	const mark = "CPFs purged after BATCHHOOK_RECORD_RETENTION"

	out, errOut, code := run("show", "s_old")
	if code != 0 {
		t.Fatalf("submissions show = %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{`^s_old\s+0\s+failed\s+1\s.*` + mark, `^s_old\s+1\s+submit_unknown\s+1\s.*` + mark} {
		if !regexpLine(out, want) {
			t.Errorf("submissions show: no line matching %s\n%s", want, out)
		}
	}
	if !regexpLine(out, `^s_old\s+2\s+failed\s`) || regexpLine(out, `^s_old\s+2\s.*purged`) {
		t.Errorf("submissions show: chunk 2, within retention, must be listed without the purge note\n%s", out)
	}
	if regexpLine(out+errOut, `resend s_old [01]\b`) {
		t.Errorf("submissions show suggests resending a chunk whose CPFs are gone\n%s%s", out, errOut)
	}

	out, errOut, code = run("unknown")
	if code != 0 || !regexpLine(out, `^s_old\s+1\s+submit_unknown\s.*`+mark) {
		t.Fatalf("submissions unknown = %d, want chunk 1 with %q\n%s%s", code, mark, out, errOut)
	}

	if _, errOut, code := run("resend", "s_old", "0"); code != 1 || !strings.Contains(errOut, "RECORD_RETENTION") || !strings.Contains(errOut, "new submission") {
		t.Fatalf("submissions resend of a purged chunk = %d, want 1 saying the CPFs were deleted\n%s", code, errOut)
	}
	var help bytes.Buffer
	submissionsCmd(context.Background(), []string{"help"}, Env{Stdout: &help, Stderr: &help})
	if !strings.Contains(help.String(), "CPFs purged") {
		t.Errorf("submissions help does not say a chunk whose CPFs were purged cannot be resent\n%s", help.String())
	}

	out, _, code = run("show", "s_old", "--json")
	if code != 0 || strings.Count(out, `"cpfs_purged": true`) != 2 {
		t.Fatalf("submissions show --json = %d, want cpfs_purged on chunks 0 and 1\n%s", code, out)
	}
}
