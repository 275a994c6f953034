package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/batchhook/batchhook/config"
	"github.com/batchhook/batchhook/submit"
)

// dryRunReply is what submit --dry-run --json prints: the intake's counts
// and the size of each batch that would be submitted, never a CPF.
type dryRunReply struct {
	Lines      int              `json:"lines"`
	Valid      int              `json:"valid"`
	Duplicates int              `json:"duplicates"`
	Invalid    []submit.Invalid `json:"invalid"`
	Batches    []int            `json:"batches"`
	Error      string           `json:"error,omitempty"`
}

// submitDryRun validates and splits a file as the daemon's intake would
// (submit.ParseIntake, submit.Chunks of submit.MaxChunk) and reports the
// batches it would submit. Nothing is sent.
func submitDryRun(path, column string, strict, asJSON bool, e Env) int {
	in := e.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			fmt.Fprintf(e.Stderr, "batchhook submit: %v\n", err)
			return 1
		}
		defer f.Close()
		in = f
	}
	// The daemon refuses a body over MAX_SUBMISSION_BYTES; read one byte
	// more than its default to say so.
	limit := config.Defaults().MaxSubmissionBytes
	lr := &io.LimitedReader{R: in, N: limit + 1}
	o := submit.IntakeOptions{Format: submit.FormatLines}
	if column != "" {
		o = submit.IntakeOptions{Format: submit.FormatCSV, Column: column}
	}
	intake, err := submit.ParseIntake(lr, o)
	if err != nil {
		fmt.Fprintf(e.Stderr, "batchhook submit: %v\n", err)
		return 1
	}
	if lr.N == 0 {
		fmt.Fprintf(e.Stderr, "batchhook submit: the file is larger than %d bytes, the daemon's default BATCHHOOK_MAX_SUBMISSION_BYTES: split it\n", limit)
		return 1
	}
	r := dryRunReply{Lines: intake.Lines, Valid: intake.Valid, Duplicates: intake.Duplicates, Invalid: intake.Invalid, Batches: []int{}}
	switch {
	case strict && len(intake.Invalid) > 0:
		r.Error = fmt.Sprintf("%s and --strict: nothing would be submitted", plural(len(intake.Invalid), "invalid line", "invalid lines"))
	case intake.Valid == 0:
		r.Error = "no valid CPF: nothing would be submitted"
	default:
		for _, c := range submit.Chunks(intake.CPFs, submit.MaxChunk) {
			r.Batches = append(r.Batches, len(c))
		}
	}
	code := 0
	if r.Error != "" {
		code = 1
	}
	if asJSON {
		raw, _ := json.Marshal(r)
		if err := printJSON(e.Stdout, raw); err != nil {
			return exitOf(err, e.Stderr)
		}
		return code
	}
	for _, inv := range r.Invalid {
		fmt.Fprintf(e.Stderr, "line %d: %s: %s\n", inv.Line, inv.Masked, inv.Reason)
	}
	fmt.Fprintf(e.Stdout, "%s: %s, %s dropped, %d invalid\n", plural(r.Lines, "line", "lines"), plural(r.Valid, "valid CPF", "valid CPFs"),
		plural(r.Duplicates, "duplicate", "duplicates"), len(r.Invalid))
	if r.Error != "" {
		fmt.Fprintf(e.Stderr, "batchhook submit: %s\n", r.Error)
		return code
	}
	for i, n := range r.Batches {
		fmt.Fprintf(e.Stdout, "batch %d: %s\n", i+1, plural(n, "CPF", "CPFs"))
	}
	fmt.Fprintf(e.Stdout, "dry run: would submit %s; nothing was sent\n", plural(len(r.Batches), "batch", "batches"))
	return 0
}
