// Package buildinfo reads what the binary knows of its own build: the
// module version, the commit it was built from and the Go release. The
// version command, the daemon's started line and the
// batchhook_build_info series all say the same, from here.
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// Info is one binary's build.
type Info struct {
	// Version is the module version, "(devel)" for a build from a
	// checkout.
	Version string
	// Commit is the VCS revision, "unknown" when the build did not stamp
	// one (go run, -buildvcs=false, a tree outside git).
	Commit string
	// Go is the Go release the binary was built with.
	Go string
}

// Read returns the running binary's build.
func Read() Info {
	info := Info{Version: "(devel)", Commit: "unknown", Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return info
	}
	if bi.Main.Version != "" {
		info.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			info.Commit = s.Value
		}
	}
	return info
}
