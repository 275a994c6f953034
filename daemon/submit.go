package daemon

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/batchhook/batchhook/fetcher"
	"github.com/batchhook/batchhook/store"
	"github.com/batchhook/batchhook/submit"
)

// submitSide wires the submit package: the submitter that sends chunks to
// the provider, the reconciler that polls batches whose notification did
// not come (reading status through the fetcher's client), and the service
// the admin API drives.
func (d *Daemon) submitSide(reader *fetcher.Client) (*submit.Submitter, *submit.Reconciler, *submit.Service, error) {
	cfg := d.cfg
	client, err := submit.NewClient(submit.ClientOptions{BaseURL: cfg.APIBaseURL,
		APIKey: d.secrets.current("API_KEY"), Timeout: cfg.FetchTimeout, Observe: d.provider.Observe})
	if err != nil {
		return nil, nil, nil, err
	}
	recent, err := d.store.RecentSends(time.Now().Add(-time.Minute))
	if err != nil {
		return nil, nil, nil, err
	}
	sub, err := submit.NewSubmitter(submit.SubmitterOptions{Queue: d.store, Sender: client,
		Logger:    d.log.With().Str("component", "submitter").Logger(),
		PerMinute: cfg.SubmitPerMinute, MaxInFlight: cfg.MaxInFlight, Recent: recent, ReconcileAfter: cfg.ReconcileAfter,
		BackoffBase: cfg.BackoffBase, BackoffMax: cfg.BackoffMax, Observer: d.metrics})
	if err != nil {
		return nil, nil, nil, err
	}
	rec, err := submit.NewReconciler(submit.ReconcilerOptions{Queue: d.store, Reader: statusReader{reader},
		NotFoundGrace: cfg.NotFoundGrace,
		Logger:        d.log.With().Str("component", "reconciler").Logger(),
		Retention:     cfg.Retention, BackoffBase: cfg.BackoffBase, BackoffMax: cfg.BackoffMax, Observer: d.metrics})
	if err != nil {
		return nil, nil, nil, err
	}
	svc, err := submit.NewService(submit.ServiceOptions{Store: d.store,
		Logger: d.log.With().Str("component", "submit").Logger(),
		Rule:   submit.ResubmitRule{Field: cfg.ResubmitField, Values: cfg.ResubmitValueList(), CPFField: cfg.ItemCPFField},
		Results: func(b store.Batch) (io.ReadCloser, error) {
			return d.exports.OpenResults(b.ID)
		}})
	if err != nil {
		return nil, nil, nil, err
	}
	return sub, rec, svc, nil
}

// statusReader maps the fetcher client's 404 to submit.ErrUnknownBatch, so
// the submit package needs no knowledge of the fetcher's error kinds.
type statusReader struct{ c *fetcher.Client }

func (r statusReader) Status(ctx context.Context, id string) (string, error) {
	status, err := r.c.Status(ctx, id)
	var fe *fetcher.Error
	if errors.As(err, &fe) && fe.Kind == fetcher.KindNotFound {
		return "", unknownBatch{err}
	}
	return status, err
}

// unknownBatch is a 404 from the fetcher's client that is also
// submit.ErrUnknownBatch, with the client's message alone: it already says
// the provider does not know the batch, so the reason is not said twice.
type unknownBatch struct{ err error }

func (u unknownBatch) Error() string        { return u.err.Error() }
func (u unknownBatch) Unwrap() error        { return u.err }
func (u unknownBatch) Is(target error) bool { return target == submit.ErrUnknownBatch }
