package main

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"text/tabwriter"

	"github.com/batchhook/batchhook/cli"
	"github.com/batchhook/batchhook/config"
	"github.com/batchhook/batchhook/daemon"
	"github.com/batchhook/batchhook/internal/logging"
	"github.com/batchhook/batchhook/internal/memreclaim"
)

const serveUsageHead = `Usage: batchhook serve [--env-file FILE]

Runs the daemon until SIGINT or SIGTERM (a second one exits at once). Every
setting is an environment variable, listed below with its default
(docs/configuration.md says what each does). SIGHUP re-reads the secrets.
Logs are JSON lines on stdout.

  --env-file FILE  also read variables from FILE, in the syntax of systemd's
                   EnvironmentFile= (NAME=VALUE lines, # or ; comments,
                   optional quotes); a variable set in the environment wins

Environment:
`

// serveUsage is the usage with every variable the daemon reads and its
// default, generated from the configuration's one definition.
func serveUsage() string {
	var b strings.Builder
	b.WriteString(serveUsageHead)
	tw := tabwriter.NewWriter(&b, 0, 2, 2, ' ', 0)
	for _, v := range config.VariableDocs() {
		fmt.Fprintf(tw, "  %s\t%s\n", v.Name, v.Default)
	}
	tw.Flush()
	return b.String()
}

// serveArgs reads serve's arguments: --env-file FILE (or
// --env-file=FILE), or a request for help.
func serveArgs(args []string) (envFile string, help bool, err error) {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-h" || a == "--help" || a == "help":
			return "", true, nil
		case a == "--env-file" || a == "-env-file":
			if i+1 >= len(args) || args[i+1] == "" {
				return "", false, errors.New("--env-file needs a file")
			}
			i++
			envFile = args[i]
		case strings.HasPrefix(a, "--env-file=") || strings.HasPrefix(a, "-env-file="):
			_, envFile, _ = strings.Cut(a, "=")
			if envFile == "" {
				return "", false, errors.New("--env-file needs a file")
			}
		default:
			return "", false, fmt.Errorf("unexpected argument %q", a)
		}
	}
	return envFile, false, nil
}

func serve(ctx context.Context, args []string, e cli.Env) int {
	stdout, stderr := e.Stdout, e.Stderr
	envFile, help, err := serveArgs(args)
	switch {
	case help:
		fmt.Fprint(stdout, serveUsage())
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "batchhook serve: %v\n%s", err, serveUsage())
		return 2
	}
	var file *config.EnvFile
	if envFile != "" {
		if file, err = config.ReadEnvFile(envFile); err != nil {
			fmt.Fprintf(stderr, "batchhook: configuration: %v\n", err)
			return 2
		}
	}
	cfg, err := config.LoadWithFile(daemon.SinkRules(), file)
	if err != nil {
		fmt.Fprintf(stderr, "batchhook: configuration: %v\n", err)
		return 2
	}
	log := logging.New(cfg.LogLevel, cfg.LogFormat, stdout)
	// Process-wide memory settings live here, not in the daemon: the
	// collector works harder as the heap nears the limit, so a flood cannot
	// grow it unchecked, and the reclaimer returns memory once it is over.
	if limit, ok := cfg.MemoryLimitBytes(); ok {
		debug.SetMemoryLimit(limit)
	}
	rctx, stopReclaim := context.WithCancel(context.Background())
	reclaimed := make(chan struct{})
	go func() {
		defer close(reclaimed)
		memreclaim.New(log.With().Str("component", "daemon").Logger()).Run(rctx)
	}()
	defer func() { stopReclaim(); <-reclaimed }()
	d := daemon.New(*cfg, log)
	if err := d.Start(nil); err != nil {
		log.Error().Str("component", "daemon").Str("event", "start_failed").Err(err).Msg("batchhook could not start")
		fmt.Fprintf(stderr, "batchhook: %v\n", err)
		if errors.Is(err, daemon.ErrSinkConfig) || errors.Is(err, daemon.ErrDirConfig) {
			return 2
		}
		return 1
	}
	var fatal error
	for ctx.Err() == nil && fatal == nil {
		select {
		case <-ctx.Done():
		case fatal = <-d.Fatal(): // logged by the daemon (store_failed)
		case <-e.Reloads:
			_ = d.Reload() // logged by Reload; the old values stay on failure
		}
	}
	if fatal == nil {
		log.Info().Str("component", "daemon").Str("event", "stopping").Msg("signal received; stopping")
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*daemon.ShutdownTimeout)
	defer cancel()
	err = d.Stop(sctx)
	switch {
	case fatal != nil:
		// The store failed: exit non-zero so the supervisor restarts
		// batchhook on a fresh open (systemd Restart=on-failure, the pod's
		// restart policy). Stop's errors follow from the failure.
		fmt.Fprintf(stderr, "batchhook: %v\n", fatal)
		return 1
	case err != nil:
		log.Error().Str("component", "daemon").Str("event", "stop_failed").Err(err).Msg("unclean stop")
		return 1
	}
	return 0
}
