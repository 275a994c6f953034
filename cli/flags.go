package cli

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/batchhook/batchhook/config"
)

// parseArgs parses flags wherever they stand among the positional
// arguments ("batches show ID --json" as well as "--json batches show ID"),
// which Go's flag package alone does not.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if rest[0] == "--" {
			return append(positional, rest[1:]...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
		if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
			continue
		}
	}
}

// newFlags is every command's preamble: a flag set named name that
// reports to stderr and, on a bad flag or -help, prints usage there, then
// every flag with its default.
func newFlags(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	return fs
}

// subcommand is the preamble of a command made of subcommands (batches
// list, …): it returns args[0]; or, when ok is false, the command ends
// with code: no subcommand prints usage to stderr (2), asking for help
// prints it to stdout (0).
func subcommand(args []string, usage string, e Env) (sub string, code int, ok bool) {
	if len(args) == 0 {
		fmt.Fprint(e.Stderr, usage)
		return "", 2, false
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(e.Stdout, usage)
		return "", 0, false
	}
	return args[0], 0, true
}

// adminFlags is the preamble of the commands that talk to the admin API:
// it adds --admin and --json to fs and returns a constructor for the
// client once fs is parsed. The table's adminWords complete them.
func adminFlags(fs *flag.FlagSet) (asJSON *bool, client func() (*adminClient, error)) {
	admin := fs.String("admin", "", "admin API URL (default $BATCHHOOK_ADMIN_URL or "+config.DefaultAdminURL+")")
	asJSON = fs.Bool("json", false, "print JSON instead of a table")
	return asJSON, func() (*adminClient, error) { return newAdminClient(*admin) }
}
