package httpsink_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependsOnNoDaemonPackage: the sink gets everything through Options;
// it must not reach into the daemon's configuration, store, export,
// fetcher or receiver, even indirectly.
func TestDependsOnNoDaemonPackage(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps gave %d packages; the command no longer works as expected", len(deps))
	}
	const module = "github.com/batchhook/batchhook/"
	for _, d := range deps {
		for _, banned := range []string{"config", "store", "export", "fetcher", "receiver"} {
			if d == module+banned || strings.HasPrefix(d, module+banned+"/") {
				t.Errorf("sink/httpsink depends on %s", d)
			}
		}
	}
}
