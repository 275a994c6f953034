package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/store"
)

func TestPreviousRunGauge(t *testing.T) {
	st, err := store.Open(t.TempDir(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for failed, want := range map[bool]string{true: "batchhook_previous_run_failed 1\n", false: "batchhook_previous_run_failed 0\n"} {
		m := New(st, time.Now)
		m.PreviousRun(failed)
		if text := scrape(t, m); !strings.Contains(text, "# TYPE batchhook_previous_run_failed gauge\n") || !strings.Contains(text, want) {
			t.Fatalf("PreviousRun(%v): want %q in\n%s", failed, want, text)
		}
	}
}
