package admin

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
)

// defaultBackupStall is how long one write of a backup stream may wait for
// a client that stopped reading (Options.BackupStall).
const defaultBackupStall = 30 * time.Second

// backup streams a consistent snapshot of the database (GET /admin/backup)
// while the daemon serves. The body is the bbolt file as of one commit,
// with Content-Length set: a stream cut short is seen as such by the
// client (the CLI also checks the file). The server's write timeout would
// cut a large database, so each write gets its own deadline instead: a
// client that stalls or goes away ends the stream, and with it the read
// transaction, which must not stay open for nothing (past the store's
// first 1 GiB memory map, a commit that grows the map waits for every
// read transaction to end).
func (s *Server) backup(c echo.Context) error {
	start := s.o.Now()
	name := "batchhook-" + start.UTC().Format("20060102T150405Z") + ".db"
	resp := c.Response()
	w := &deadlineWriter{w: resp, rc: http.NewResponseController(resp), stall: s.o.BackupStall}
	n, err := s.o.Store.Backup(c.Request().Context(), w, func(size int64) {
		h := resp.Header()
		h.Set(echo.HeaderContentType, echo.MIMEOctetStream)
		h.Set(echo.HeaderContentDisposition, `attachment; filename="`+name+`"`)
		h.Set(echo.HeaderContentLength, strconv.FormatInt(size, 10))
		h.Set("Cache-Control", "no-store")
		resp.WriteHeader(http.StatusOK)
	})
	took := s.o.Now().Sub(start)
	if err != nil {
		s.o.Logger.Warn().Str("event", "backup_failed").Int64("bytes", n).Int64("took_ms", took.Milliseconds()).Err(err).
			Msg("backup stream ended early (client gone, stalled, or store error)")
		if resp.Committed {
			return nil // headers are out: the short body tells the client
		}
		return storeError(c, err)
	}
	s.o.Logger.Info().Str("event", "backup_served").Int64("bytes", n).Int64("took_ms", took.Milliseconds()).Msg("database backup streamed")
	return nil
}

// deadlineWriter gives each write of the stream its own deadline.
type deadlineWriter struct {
	w     io.Writer
	rc    *http.ResponseController
	stall time.Duration
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	if err := d.rc.SetWriteDeadline(time.Now().Add(d.stall)); err != nil {
		return 0, fmt.Errorf("set the backup's write deadline: %w", err)
	}
	n, err := d.w.Write(p)
	if err != nil {
		return n, fmt.Errorf("send backup: %w", err)
	}
	return n, nil
}

// Backuper streams the database (store.Store.Backup): it returns the
// store's ErrFailed once the store failed, the context's error once ctx
// ends, or the writer's error.
type Backuper interface {
	Backup(ctx context.Context, w io.Writer, size func(int64)) (int64, error)
}
