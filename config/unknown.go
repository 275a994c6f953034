package config

import (
	"fmt"
	"slices"
	"strings"
)

// ClientVariables are the variables only the CLI and the sandbox client
// read (DECISIONS 11 and 29); the daemon ignores them, but they are ours,
// so a daemon started with them set does not call them unknown.
func ClientVariables() []string {
	return []string{Var("ADMIN_URL"), Var("GATEWAY_URL"), Var("SANDBOX_URL"), Var("GATEWAY_AUTH_HEADER"),
		Var("GATEWAY_AUTH_VALUE"), Var("GATEWAY_AUTH_VALUE_FILE")}
}

// KnownVariables is every BATCHHOOK_ variable any batchhook command reads.
func KnownVariables() []string {
	return append(Variables(), ClientVariables()...)
}

// unknownVariables returns a Warning for each BATCHHOOK_ variable in environ
// that no batchhook command reads: a typo (BATCHHOOK_SIGNING_SECRETS) would
// otherwise leave the default in force without a word. The warning names
// the closest known variable when one is near.
func unknownVariables(environ []string) []Warning {
	known := KnownVariables()
	var out []Warning
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, Prefix+"_") || slices.Contains(known, name) {
			continue
		}
		msg := "batchhook reads no such variable; it is ignored"
		if s := Suggest(name, known); s != "" {
			msg += "; did you mean " + s + "?"
		}
		out = append(out, Warning{Event: "unknown_variable", Variable: name, Message: msg})
	}
	slices.SortFunc(out, func(a, b Warning) int { return strings.Compare(a.Variable, b.Variable) })
	return out
}

// Suggest returns the name of known closest to name by edit distance, or
// "" when none is close enough to be a plausible typo (at most a third of
// the name's letters differ, and never more than 4).
func Suggest(name string, known []string) string {
	best, bestD := "", 0
	for _, k := range known {
		d := levenshtein(strings.ToUpper(name), k)
		if best == "" || d < bestD {
			best, bestD = k, d
		}
	}
	short := len(strings.TrimPrefix(name, Prefix+"_"))
	if best == "" || bestD > min(4, max(1, short/3)) {
		return ""
	}
	return best
}

// levenshtein is the edit distance between a and b (insertions, deletions
// and substitutions of bytes; the names are ASCII).
func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// The provider's limits (docs/provider-api.md §8): submissions per minute and
// batches in flight per operator.
const (
	ProviderSubmitPerMinute = 10
	ProviderMaxInFlight     = 50
)

// AboveProviderLimits names the variables set above the provider's limits
// (an account with a raised quota may need that; anyone else gets 429s).
func (c *Config) AboveProviderLimits() []string {
	var out []string
	if c.SubmitPerMinute > ProviderSubmitPerMinute {
		out = append(out, Var("SUBMIT_PER_MINUTE"))
	}
	if c.MaxInFlight > ProviderMaxInFlight {
		out = append(out, Var("MAX_IN_FLIGHT"))
	}
	return out
}

// limitWarnings returns a Warning for each limit set above the provider's.
func (c *Config) limitWarnings() []Warning {
	var out []Warning
	if c.SubmitPerMinute > ProviderSubmitPerMinute {
		out = append(out, Warning{Event: "limit_above_provider", Variable: Var("SUBMIT_PER_MINUTE"),
			Message: fmt.Sprintf("%d is above the provider's %d submissions per minute (docs/provider-api.md §8): expect 429 replies unless your account allows more",
				c.SubmitPerMinute, ProviderSubmitPerMinute)})
	}
	if c.MaxInFlight > ProviderMaxInFlight {
		out = append(out, Warning{Event: "limit_above_provider", Variable: Var("MAX_IN_FLIGHT"),
			Message: fmt.Sprintf("%d is above the provider's %d batches in flight (docs/provider-api.md §8): expect 429 replies unless your account allows more",
				c.MaxInFlight, ProviderMaxInFlight)})
	}
	return out
}

// meantFor returns " (X is set: did you mean T?)" for each variable X in
// set that looks meant for one of targets, the names of a missing required
// setting, else "". A name looks meant for T when Suggest, which warns of
// unknown variables, would name T for it, or when it is T without the
// BATCHHOOK_ prefix (any case). Only names are shown, never a value.
func meantFor(set []string, targets ...string) string {
	known := KnownVariables()
	var hints []string
	for _, name := range set {
		if slices.Contains(known, name) {
			continue // a variable of ours, set on purpose
		}
		full := name
		if !strings.HasPrefix(strings.ToUpper(name), Prefix+"_") {
			full = Var(name)
		}
		guess := Suggest(full, known)
		if slices.Contains(targets, guess) {
			hints = append(hints, name+" is set: did you mean "+guess+"?")
		}
	}
	if len(hints) == 0 {
		return ""
	}
	return " (" + strings.Join(hints, "; ") + ")"
}
