package config

import (
	"os"
	"slices"
	"strings"
)

// env is where Load reads the daemon's variables: the process
// environment, over the variables of an env file (serve --env-file) when
// one is given. A variable set in the process environment wins, as it
// does for a unit with both Environment= and EnvironmentFile=.
type env struct {
	file map[string]string
}

// lookup returns the value of name and whether either layer sets it.
func (e env) lookup(name string) (string, bool) {
	if v, ok := os.LookupEnv(name); ok {
		return v, true
	}
	v, ok := e.file[name]
	return v, ok
}

// names returns every variable either layer sets, sorted and without
// repeats.
func (e env) names() []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		out = append(out, name)
	}
	for name := range e.file {
		out = append(out, name)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
