package natssink

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// The outcomes of Check other than nil.
var (
	// ErrNoStream: the server answered and no stream is bound to the
	// subject. The daemon stops the start (exit 2).
	ErrNoStream = errors.New("no JetStream stream is bound to the subject")
	// ErrUnreachable: the server could not be asked. The daemon logs a
	// warning and starts; deliveries retry until the server is back.
	ErrUnreachable = errors.New("the NATS server could not be reached")
)

// Check is the start-up check (DECISIONS 30), bounded by ctx. It returns
// nil when a stream is bound to the subject (or was just created, with
// Options.CreateStream), an error wrapping ErrNoStream that names the
// subject when the server has none, and one wrapping ErrUnreachable when
// the server did not answer.
func (s *Sink) Check(ctx context.Context) error { return s.check(ctx, s.o.Subject) }

// CheckPayments is Check for the payments subject; the daemon runs it when
// payments are enabled.
func (s *Sink) CheckPayments(ctx context.Context) error { return s.check(ctx, s.o.PaymentsSubject) }

func (s *Sink) check(ctx context.Context, subject string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	_, js, err := s.conn()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	_, err = js.StreamNameBySubject(ctx, subject)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, jetstream.ErrJetStreamNotEnabled), errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount):
		return fmt.Errorf("%w: subject %s (JetStream is not enabled on the server)", ErrNoStream, subject)
	case !errors.Is(err, jetstream.ErrStreamNotFound):
		return fmt.Errorf("%w: ask for the stream of subject %s: %v", ErrUnreachable, subject, err)
	case !s.o.CreateStream:
		return fmt.Errorf("%w: subject %s (create one, e.g. with nats stream add, or let batchhook create it)", ErrNoStream, subject)
	}
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{
		Name:       StreamName(subject),
		Subjects:   []string{subject},
		Storage:    jetstream.FileStorage,
		Duplicates: DuplicateWindow,
	})
	if err != nil {
		return fmt.Errorf("%w: subject %s: create stream %s: %v", ErrNoStream, subject, StreamName(subject), err)
	}
	return nil
}

// StreamName is the name of the stream Check creates for subject: the
// subject with its dots as underscores, in upper case (batchhook.results
// → BATCHHOOK_RESULTS).
func StreamName(subject string) string {
	return strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(subject))
}
