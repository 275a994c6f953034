package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/batchhook/batchhook/store"
)

const backupUsage = `Usage:
  batchhook backup FILE [--force] [--json] [--admin URL]

Streams a consistent snapshot of the running daemon's database (GET
/admin/backup) into FILE (mode 0600, written to a temporary file in the same
directory, fsynced and renamed), then opens it and checks it, and prints
each bucket's key count. It refuses to replace an existing FILE without
--force; on any failure no FILE is left. Back up EXPORT_DIR after it (docs/operations.md,
"Backup, restore and compaction"). Same environment as "batchhook batches".
`

func backupCmd(ctx context.Context, args []string, e Env) int {
	stdout, stderr := e.Stdout, e.Stderr
	fs := newFlags("backup", backupUsage, stderr)
	asJSON, client := adminFlags(fs)
	force := fs.Bool("force", false, "replace FILE if it exists")
	pos, err := parseArgs(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	if len(pos) != 1 {
		fmt.Fprint(stderr, backupUsage)
		return 2
	}
	c, err := client()
	if err != nil {
		fmt.Fprintf(stderr, "batchhook backup: %v\n", err)
		return 2
	}
	file := pos[0]
	if _, err := os.Lstat(file); err == nil && !*force {
		fmt.Fprintf(stderr, "batchhook backup: %s exists; pass --force to replace it\n", file)
		return 1
	}
	// A backup killed mid-download leaves its temporary file: remove it.
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(file), "."+globEscape(filepath.Base(file))+".tmp-*"))
	for _, p := range left {
		if err := os.Remove(p); err != nil {
			fmt.Fprintf(stderr, "batchhook backup: remove %s, left by an interrupted backup: %v\n", p, err)
			return 1
		}
		fmt.Fprintf(stdout, "removed %s, left by an interrupted backup\n", p)
	}
	sum, err := c.backupTo(ctx, file, *force)
	if err != nil {
		fmt.Fprintf(stderr, "batchhook backup: %v\n", explain(err))
		return 1
	}
	if *asJSON {
		raw, _ := json.Marshal(sum)
		return exitOf(printJSON(stdout, raw), stderr)
	}
	fmt.Fprintf(stdout, "backup written to %s: %d bytes, transaction %d\n", file, sum.Size, sum.TxID)
	printSummary(stdout, sum)
	return 0
}

// backupTo downloads the backup into a temporary file beside file, checks
// it and puts it in place; on failure the temporary file is removed.
func (c *adminClient) backupTo(ctx context.Context, file string, force bool) (sum store.Summary, err error) {
	dir := filepath.Dir(file)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(file)+".tmp-*") // 0600, O_EXCL
	if err != nil {
		return sum, fmt.Errorf("create a temporary file in %s: %w", dir, err)
	}
	placed := false
	defer func() {
		if !placed {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := c.download(ctx, "/admin/backup", tmp); err != nil {
		return sum, err
	}
	if err := tmp.Sync(); err != nil {
		return sum, fmt.Errorf("fsync %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return sum, fmt.Errorf("close %s: %w", tmp.Name(), err)
	}
	if sum, err = store.Check(tmp.Name()); err != nil {
		return sum, fmt.Errorf("the downloaded backup: %w", err)
	}
	if force {
		err = os.Rename(tmp.Name(), file)
	} else if err = os.Link(tmp.Name(), file); err == nil { // fails if file appeared meanwhile
		err = os.Remove(tmp.Name())
	}
	if err != nil {
		return sum, fmt.Errorf("put the backup at %s: %w", file, err)
	}
	placed = true
	return sum, fsyncDir(dir)
}

// download streams a GET's 2xx body into w. The reply has a
// Content-Length: a body cut short is an error (io.ErrUnexpectedEOF).
func (c *adminClient) download(ctx context.Context, path string, w io.Writer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	if len(c.token) > 0 {
		req.Header.Set("Authorization", "Bearer "+string(c.token))
	}
	// No overall timeout: a large database takes long; the server ends a
	// stalled stream and the reply header must come within 30s.
	hc := &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: 30 * time.Second}}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("reach the admin API at %s (is batchhook running? see --admin): %w", c.base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		reply, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		return c.replyError(http.MethodGet, path, resp, reply)
	}
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return fmt.Errorf("receive the backup (%d bytes in): %w", n, err)
	}
	return nil
}

func fsyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open %s to fsync it: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	return nil
}

func printSummary(w io.Writer, sum store.Summary) {
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "BUCKET\tKEYS\tSHA256")
	for _, b := range sum.Buckets {
		fmt.Fprintf(tw, "%s\t%d\t%s\n", b.Name, b.Keys, b.Digest)
	}
	tw.Flush()
}

// globEscape quotes the glob metacharacters of a file name.
func globEscape(name string) string {
	var b strings.Builder
	for _, r := range name {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteRune('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
