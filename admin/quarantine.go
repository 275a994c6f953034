package admin

import (
	"errors"
	"strings"

	"github.com/batchhook/batchhook/store"
)

// findQuarantined takes a whole id or a unique prefix of one (ids are 64
// lowercase hex digits: a prefix of anything else is unknown).
func (s *Server) findQuarantined(id string) (*store.Quarantined, error) {
	if q, err := s.o.Store.GetQuarantined(id); !errors.Is(err, store.ErrNotFound) {
		return q, err
	}
	id = strings.ToLower(id)
	if id == "" || len(id) > 64 || strings.Trim(id, "0123456789abcdef") != "" {
		return nil, store.ErrNotFound
	}
	return s.o.Store.FindQuarantined(id)
}
