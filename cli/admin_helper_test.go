package cli

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/admin"
	"github.com/batchhook/batchhook/store"
	"github.com/batchhook/batchhook/submit"
)

// serveAdmin serves the real admin API over st on loopback, wired as the
// daemon wires it (a submission service, no metrics, ready) and changed
// by edit when it is not nil; it returns the server's base URL. The
// admin's token is token ("" for none).
func serveAdmin(t *testing.T, st *store.Store, token string, edit func(*admin.Options)) string {
	t.Helper()
	svc, err := submit.NewService(submit.ServiceOptions{Store: st, Logger: zerolog.Nop(),
		Rule:    submit.ResubmitRule{Field: "result", Values: []string{"pending"}, CPFField: "cpf"},
		Results: func(store.Batch) (io.ReadCloser, error) { return nil, os.ErrNotExist }})
	if err != nil {
		t.Fatal(err)
	}
	opts := admin.Options{Store: st, Token: func() []byte { return []byte(token) }, Submissions: svc, MaxSubmissionBytes: 4096,
		Retention: time.Hour, Metrics: http.NotFoundHandler(), Ready: func() error { return nil }, Logger: zerolog.Nop()}
	if edit != nil {
		edit(&opts)
	}
	srv, err := admin.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return hs.URL
}

// openStore is a real store in a temporary directory, closed at the end.
func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(t.TempDir(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
