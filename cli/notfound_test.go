package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/store"
)

// TestNotFoundNamesWhat: a 404 says what was missing: the payment event,
// the chunk of an existing submission (with the indexes it has), or the
// submission itself; not the generic "no such batch or entry".
func TestNotFoundNamesWhat(t *testing.T) {
	base, _ := paymentsAdmin(t, true)
	_, errOut, code := runIn(t, paymentsCmd, "show", "1", "--admin", base)
	if code != 1 || !strings.Contains(errOut, "no payment event 1") || strings.Contains(errOut, "no such batch") {
		t.Fatalf("payments show 1 on an empty log = %d %s", code, errOut)
	}

	base, st := adminOver(t)
	if _, err := st.AddSubmission(store.Submission{ID: "s1"}, [][]string{{"52998224725"}, {"11144477735"}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	resend := func(args ...string) (string, int) {
		var out, errOut bytes.Buffer
		code := submissionsCmd(context.Background(), append([]string{"resend"}, append(args, "--admin", base)...),
			Env{Stdout: &out, Stderr: &errOut})
		return errOut.String(), code
	}
	if errOut, code := resend("s1", "7"); code != 1 || !strings.Contains(errOut, "submission s1 has no chunk 7 (its chunks are 0 to 1)") {
		t.Fatalf("resend of a missing chunk = %d %s", code, errOut)
	}
	if errOut, code := resend("nope", "0"); code != 1 || !strings.Contains(errOut, "no submission nope") {
		t.Fatalf("resend in a missing submission = %d %s", code, errOut)
	}
}
