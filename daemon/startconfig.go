package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/config"
	"github.com/batchhook/batchhook/internal/safefs"
	"github.com/batchhook/batchhook/store"
)

// ErrDirConfig marks a start error that is the operator's to fix in the
// configuration: the data or export directory cannot be created or
// written, or holds a link or a file where batchhook makes a directory
// (.partial, payments/) or keeps its database. serve exits 2 for it, as
// for any other configuration error (docs/configuration.md).
var ErrDirConfig = errors.New("directory not usable")

// dirError names the variable of a directory the daemon could not use (an
// unwritable, read-only or misplaced DATA_DIR or EXPORT_DIR, a link or a
// file planted in it) and marks it ErrDirConfig, with the fix; any other
// error (a locked or damaged database) is returned unchanged.
func dirError(name, path string, err error) error {
	if errors.Is(err, store.ErrLocked) {
		return err
	}
	if errors.Is(err, safefs.ErrUnsafePath) || errors.Is(err, store.ErrSymlink) {
		return fmt.Errorf("%w: %s (%s) holds an entry batchhook will not use: %w; "+
			"remove or move it (batchhook makes its directories and files there itself, and never follows a link)",
			ErrDirConfig, config.Var(name), path, err)
	}
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.ENOTDIR) ||
		errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w: %s (%s) cannot be created or written: %w; %s", ErrDirConfig, config.Var(name), path, err, config.DirFix(err))
	}
	return err
}

// logWarnings logs what Load accepted but the operator should know; the
// path and mode only for the warnings about a file or directory.
func logWarnings(log zerolog.Logger, warns []config.Warning) {
	for _, w := range warns {
		ev := log.Warn().Str("component", "daemon").Str("event", w.Event).Str("variable", w.Variable)
		if w.Path != "" {
			ev = ev.Str("path", absPath(w.Path)).Str("mode", fmt.Sprintf("%04o", w.Mode))
		}
		ev.Msg(w.Message)
	}
}
