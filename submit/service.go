package submit

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/rs/zerolog"

	"github.com/batchhook/batchhook/cpf"
	"github.com/batchhook/batchhook/store"
)

// MaxChunk is the provider's cap on CPFs per batch (docs/provider-api.md §8).
const MaxChunk = 1000

// Errors of the Service, for the admin API to map to statuses.
var (
	// ErrNothingValid: the body held no valid CPF (or, with strict, some
	// invalid ones); nothing was stored.
	ErrNothingValid = errors.New("nothing to submit")
	// ErrRefused: a resubmission the rule or the batch's state does not allow.
	ErrRefused = errors.New("resubmission refused")
	// ErrBadBatchID: an id to track that batchhook could not use as a
	// directory name.
	ErrBadBatchID = errors.New("bad batch id")
)

// ResubmitRule says which items of an export are sent again: those whose
// member Field is one of Values, taking the CPF from member CPFField. The
// defaults follow the simulator's items (lookupsim/doc.go): "result" is
// "pending" in expired batches and "incomplete" in partial ones.
type ResubmitRule struct {
	Field    string
	Values   []string
	CPFField string
}

// ServiceOptions configures a Service.
type ServiceOptions struct {
	Store  *store.Store
	Logger zerolog.Logger
	Rule   ResubmitRule
	// Results opens the results.ndjson of an exported batch (the export
	// sink owns the layout).
	Results func(b store.Batch) (io.ReadCloser, error)
	Now     func() time.Time // nil = time.Now
}

// Service is what the admin API calls: intake, submission status,
// tracking and resubmission. The submitter does the sending.
type Service struct {
	o   ServiceOptions
	log zerolog.Logger
}

// NewService returns a Service.
func NewService(o ServiceOptions) (*Service, error) {
	if o.Store == nil || o.Results == nil || o.Rule.Field == "" || o.Rule.CPFField == "" || len(o.Rule.Values) == 0 {
		return nil, errors.New("submit: Store, Results and a complete Rule are required")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Service{o: o, log: o.Logger}, nil
}

// Receipt is the answer to an intake.
type Receipt struct {
	Submission store.Submission
	Intake     *Intake
}

// Submit parses an intake body, and unless it holds no valid CPF (or,
// when strict, any invalid one), stores it as a submission whose chunks
// wait for the submitter. On ErrNothingValid the receipt still carries the
// intake, so the caller can show the invalid lines.
func (s *Service) Submit(r io.Reader, o IntakeOptions, strict bool) (*Receipt, error) {
	in, err := ParseIntake(r, o)
	if err != nil {
		return nil, err
	}
	rc := &Receipt{Intake: in}
	switch {
	case strict && len(in.Invalid) > 0:
		return rc, fmt.Errorf("%w: %d invalid lines and strict=true (nothing was stored)", ErrNothingValid, len(in.Invalid))
	case len(in.CPFs) == 0:
		return rc, fmt.Errorf("%w: no valid CPF in %d lines", ErrNothingValid, in.Lines)
	}
	sub, err := s.store(store.Submission{ID: "s_" + randomHex(10), Lines: in.Lines, Valid: in.Valid,
		Duplicates: in.Duplicates, Invalid: len(in.Invalid)}, in.CPFs)
	if err != nil {
		return nil, err
	}
	rc.Submission = *sub
	return rc, nil
}

func (s *Service) store(sub store.Submission, cpfs []string) (*store.Submission, error) {
	out, err := s.o.Store.AddSubmission(sub, Chunks(cpfs, MaxChunk), s.o.Now())
	if err != nil {
		return nil, err
	}
	s.log.Info().Str("event", "submission_received").Str("submission_id", out.ID).Int("cpfs", out.Valid).
		Int("invalid", out.Invalid).Int("duplicates", out.Duplicates).Int("chunks", out.Chunks).
		Str("resubmit_of", out.ResubmitOf).Msg("submission stored; its chunks wait for the submitter")
	return out, nil
}

// Get returns a submission and its chunks.
func (s *Service) Get(id string) (*store.Submission, []store.Chunk, error) {
	return s.o.Store.GetSubmission(id)
}

// Resend puts a failed or submit_unknown chunk back in the queue: the
// operator's decision after checking with the provider (docs/how-it-works.md,
// "Submitting"). Errors are the store's (ErrNotFound, ErrState).
func (s *Service) Resend(submissionID string, index int) (*store.Chunk, error) {
	c, err := s.o.Store.ChunkResend(submissionID, index, s.o.Now())
	if err != nil {
		return nil, err
	}
	s.log.Warn().Str("event", "chunk_resend").Str("submission_id", submissionID).Int("chunk", index).Int("cpfs", c.CPFCount).
		Msg("an operator put the chunk back in the queue; it will be submitted again")
	return c, nil
}

// Track makes reconciliation cover a batch submitted elsewhere: it is
// polled at once, then with backoff until final. A batch batchhook already
// knows is returned unchanged with created false.
func (s *Service) Track(id string) (*store.Batch, bool, error) {
	if err := store.CheckBatchID(id); err != nil {
		return nil, false, fmt.Errorf("%w: %v", ErrBadBatchID, err)
	}
	now := s.o.Now()
	b, created, err := s.o.Store.Track(id, now, now)
	if err == nil && created {
		s.log.Info().Str("event", "batch_tracked").Str("batch_id", id).Msg("tracking a batch submitted elsewhere")
	}
	return b, created, err
}

// Resubmit sends again the CPFs that an exported expired or partial batch
// shows as not resolved, by the rule. It refuses (ErrRefused, with the
// reason) when the batch is not such a batch, when its items do not
// identify the CPFs, when none qualifies, or when the batch was already
// resubmitted: the provider bills per CPF found, so nothing is sent twice
// by accident.
func (s *Service) Resubmit(batchID string) (*Receipt, error) {
	b, err := s.o.Store.Get(batchID)
	if err != nil {
		return nil, err
	}
	if b.State != store.StateExported {
		return nil, fmt.Errorf("%w: batch %s is %s; only an exported batch can be resubmitted", ErrRefused, batchID, b.State)
	}
	if st := b.Notification.Status; st != "expired" && st != "partial" {
		return nil, fmt.Errorf("%w: batch %s has status %q; only expired or partial batches are resubmitted", ErrRefused, batchID, st)
	}
	cpfs, err := s.selectCPFs(*b)
	if err != nil {
		return nil, err
	}
	sub, err := s.store(store.Submission{ID: "r_" + batchID, Lines: len(cpfs), Valid: len(cpfs), ResubmitOf: batchID}, cpfs)
	if errors.Is(err, store.ErrExists) {
		return nil, fmt.Errorf("%w: batch %s was already resubmitted as submission r_%s", ErrRefused, batchID, batchID)
	}
	if err != nil {
		return nil, err
	}
	return &Receipt{Submission: *sub, Intake: &Intake{CPFs: cpfs, Lines: len(cpfs), Valid: len(cpfs), Invalid: []Invalid{}}}, nil
}

// selectCPFs reads the export and returns the CPFs the rule selects.
func (s *Service) selectCPFs(b store.Batch) ([]string, error) {
	f, err := s.o.Results(b)
	if err != nil {
		return nil, fmt.Errorf("open the export of batch %s: %w", b.ID, err)
	}
	defer f.Close()
	rule := s.o.Rule
	var (
		cpfs   []string
		seen   = map[string]bool{}
		tagged bool // some item carries rule.Field at all
	)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		var item map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &item); err != nil {
			return nil, fmt.Errorf("%w: item %d of batch %s is not a JSON object", ErrRefused, line, b.ID)
		}
		var value, raw string
		if v, ok := item[rule.Field]; ok && json.Unmarshal(v, &value) == nil {
			tagged = true
		}
		if !slices.Contains(rule.Values, value) {
			continue
		}
		if json.Unmarshal(item[rule.CPFField], &raw) != nil {
			return nil, fmt.Errorf("%w: item %d of batch %s is %s but has no string member %q that identifies its CPF (BATCHHOOK_ITEM_CPF_FIELD)",
				ErrRefused, line, b.ID, value, rule.CPFField)
		}
		n, err := cpf.Normalize(raw)
		if err != nil {
			return nil, fmt.Errorf("%w: item %d of batch %s: member %q is not a valid CPF (%s)", ErrRefused, line, b.ID, rule.CPFField, cpf.Mask(raw))
		}
		if !seen[n] {
			seen[n] = true
			cpfs = append(cpfs, n)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read the export of batch %s: %w", b.ID, err)
	}
	if !tagged {
		return nil, fmt.Errorf("%w: the items of batch %s have no member %q saying which CPFs are unresolved (BATCHHOOK_RESUBMIT_FIELD)",
			ErrRefused, b.ID, rule.Field)
	}
	if len(cpfs) == 0 {
		return nil, fmt.Errorf("%w: batch %s has no item whose %q is one of %v", ErrRefused, b.ID, rule.Field, rule.Values)
	}
	return cpfs, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}
