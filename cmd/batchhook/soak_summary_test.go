package main

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
// reaches as /proc/<parent>/fd/1 on Linux; it is one write of one line,
// appended, so it neither tears nor overwrites a redirected log. Where
// that is not possible (not Linux, the parent is not go) the line is only
// in the test output, as with -v.
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
	return os.OpenFile("/proc/"+ppid+"/fd/1", os.O_WRONLY|os.O_APPEND, 0)
}
