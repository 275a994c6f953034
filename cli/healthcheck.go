package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/batchhook/batchhook/config"
)

const healthcheckUsage = `Usage: batchhook healthcheck [--admin URL] [--ready]

Exits 0 when the daemon's /healthz (or, with --ready, /readyz) answers 200,
1 otherwise: a HEALTHCHECK for images without a shell or curl.
`

func healthcheckCmd(ctx context.Context, args []string, e Env) int {
	stdout, stderr := e.Stdout, e.Stderr
	fs := newFlags("healthcheck", healthcheckUsage, stderr)
	admin := fs.String("admin", "", "admin API URL (default $BATCHHOOK_ADMIN_URL or "+config.DefaultAdminURL+")")
	ready := fs.Bool("ready", false, "check /readyz instead of /healthz")
	if _, err := parseArgs(fs, args); err != nil {
		return 2
	}
	env, err := config.LoadClient()
	if err != nil {
		fmt.Fprintf(stderr, "batchhook healthcheck: %v\n", err)
		return 1
	}
	base := env.AdminURL
	if *admin != "" {
		base = *admin
	}
	path := "/healthz"
	if *ready {
		path = "/readyz"
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+path, nil)
	if err != nil {
		fmt.Fprintf(stderr, "batchhook healthcheck: %v\n", err)
		return 1
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "batchhook healthcheck: %v\n", err)
		return 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	fmt.Fprintf(stdout, "%s %s\n", resp.Status, strings.TrimSpace(string(body)))
	if resp.StatusCode != http.StatusOK {
		return 1
	}
	return 0
}
