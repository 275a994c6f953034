package e2e

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// printSoakSummary prints a soak's one-line summary where the person running
// the suite sees it. `go test ./...` shows nothing that a passing
// package's test binary writes, to stdout or stderr, unless -v (checked
// with go1.26: only the "ok" line). So, without -v, the line is also
// written to the go command's own standard output, which a test binary
// reaches as /proc/<parent>/fd/1 on Linux, when that is a terminal or a
// pipe (a CI log, go test | tee): one write of one line, which does not
// tear. Where that is not possible (not Linux, the parent is not go, its
// output redirected to a file, whose offset a second opening does not
// share) the line is only in the test output, shown with -v or on failure.
func printSoakSummary(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	fmt.Print(line)
	if testing.Verbose() {
		return
	}
	w, err := goCommandStdout()
	if err != nil {
		return
	}
	defer w.Close()
	_, _ = w.Write([]byte(line))
}

// goCommandStdout opens the standard output of the go command that runs
// this test binary.
func goCommandStdout() (*os.File, error) {
	ppid := strconv.Itoa(os.Getppid())
	comm, err := os.ReadFile("/proc/" + ppid + "/comm")
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(string(comm)) != "go" {
		return nil, fmt.Errorf("parent is %q, not the go command", strings.TrimSpace(string(comm)))
	}
	out := "/proc/" + ppid + "/fd/1"
	// A regular file (go test > log) opened again has its own offset, and
	// the go command's next write at its offset would overwrite the line.
	if st, err := os.Stat(out); err != nil || st.Mode().IsRegular() {
		return nil, fmt.Errorf("go's output is a regular file (or unknown): %v", err)
	}
	return os.OpenFile(out, os.O_WRONLY|os.O_APPEND, 0)
}
