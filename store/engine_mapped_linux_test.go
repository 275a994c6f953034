package store

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rssFile is this process's file-backed resident memory (/proc/self/status).
func rssFile(t *testing.T) int64 {
	t.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "RssFile:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}

// After every record was read (all its pages mapped), ReleaseMapped gives
// the mapped pages back, and every record still reads the same.
func TestReleaseMappedDropsTheTouchedPages(t *testing.T) {
	s := openTest(t, t.TempDir())
	const n = 20000
	for i := 0; i < n; i += 500 {
		errs := make(chan error, 500)
		for j := range 500 {
			go func() {
				_, err := s.Record(wireNote(fmt.Sprintf("b_%08d", i+j)))
				errs <- err
			}()
		}
		for range 500 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
	}
	readAll := func() {
		for i := range n {
			b, err := s.Get(fmt.Sprintf("b_%08d", i))
			if err != nil || b.Notification.BatchID != b.ID {
				t.Fatalf("Get b_%08d = %+v, %v", i, b, err)
			}
		}
	}
	readAll()
	fi, err := os.Stat(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	before := rssFile(t)
	if err := s.ReleaseMapped(); err != nil {
		t.Fatal(err)
	}
	after := rssFile(t)
	t.Logf("database %d KiB; RssFile %d KiB before, %d KiB after", fi.Size()>>10, before>>10, after>>10)
	if dropped := before - after; dropped < fi.Size()/2 {
		t.Fatalf("ReleaseMapped dropped %d KiB of RssFile; the %d KiB database was all read", dropped>>10, fi.Size()>>10)
	}
	readAll()
	if _, err := s.Record(wireNote("b_after")); err != nil {
		t.Fatalf("a record after the release: %v", err)
	}
}

// The loop runs without error on its interval and stops with its context.
func TestRunReleaseMappedStopsWithItsContext(t *testing.T) {
	s := openTest(t, t.TempDir())
	if _, err := s.Record(wireNote("b_1")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	failed := make(chan error, 100)
	go func() {
		defer close(done)
		s.RunReleaseMapped(ctx, time.Millisecond, func(err error) { failed <- err })
	}()
	time.Sleep(30 * time.Millisecond)
	cancel()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("RunReleaseMapped still runs 2 s after its context ended")
	}
	select {
	case err := <-failed:
		t.Fatalf("a release failed: %v", err)
	default:
	}
}
