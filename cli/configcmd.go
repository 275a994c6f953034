package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/batchhook/batchhook/config"
	"github.com/batchhook/batchhook/daemon"
)

const configUsage = `Usage:
  batchhook config check [--json] [--env-file FILE]

Loads and validates the daemon's configuration from the BATCHHOOK_*
variables exactly as "batchhook serve" does, without opening the database
or binding a port, and prints the effective value of every variable (a
secret only as the fingerprint the started line logs), then the warnings
the daemon would log at start. Exit status: 0 when serve would accept the
configuration, 2 with the error (one line on stderr) when it would refuse
it. --env-file FILE reads variables from FILE beneath the environment, as
"serve --env-file FILE" does. Like serve, it sets a group-writable data directory to 0700 when
BATCHHOOK_REPAIR_PERMISSIONS=true.
`

// configCmd is "batchhook config check".
func configCmd(_ context.Context, args []string, e Env) int {
	stdout, stderr := e.Stdout, e.Stderr
	fs := newFlags("config", configUsage, stderr)
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	envFile := fs.String("env-file", "", "also read variables from `FILE` (systemd EnvironmentFile syntax); the environment wins")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 1 || pos[0] != "check" {
		fmt.Fprintf(stderr, "batchhook config: want the subcommand check\n%s", configUsage)
		return 2
	}
	var file *config.EnvFile
	if *envFile != "" {
		if file, err = config.ReadEnvFile(*envFile); err != nil {
			fmt.Fprintf(stderr, "batchhook: configuration: %v\n", err)
			return 2
		}
	}
	cfg, err := config.LoadWithFile(daemon.SinkRules(), file)
	if err != nil {
		fmt.Fprintf(stderr, "batchhook: configuration: %v\n", err)
		return 2
	}
	if *asJSON {
		type warning struct {
			Event    string `json:"event"`
			Variable string `json:"variable"`
			Path     string `json:"path,omitempty"`
			Message  string `json:"message"`
		}
		out := struct {
			Settings []config.Setting `json:"settings"`
			Warnings []warning        `json:"warnings"`
		}{Settings: cfg.Effective(), Warnings: []warning{}}
		for _, w := range cfg.Warnings {
			out.Warnings = append(out.Warnings, warning{w.Event, w.Variable, w.Path, w.Message})
		}
		raw, _ := json.Marshal(out)
		return exitOf(printJSON(stdout, raw), stderr)
	}
	tw := tabwriter.NewWriter(stdout, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "VARIABLE\tVALUE")
	for _, s := range cfg.Effective() {
		fmt.Fprintf(tw, "%s\t%s\n", s.Name, s.Value)
	}
	tw.Flush()
	for _, w := range cfg.Warnings {
		fmt.Fprintf(stdout, "warning: %s (%s): %s\n", w.Variable, w.Event, w.Message)
	}
	fmt.Fprintln(stdout, "configuration OK")
	return 0
}
