package demo

// The demo's `--payments`: a deposit and two withdrawals through the
// simulator's gateway and sandbox (with the same client as `batchhook
// sandbox`), their signed payment webhooks received by the daemon's
// payments endpoint, and the check that the file sink's day files hold
// each event once, with the provider's bytes.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/batchhook/batchhook/internal/gateway"
	"github.com/batchhook/batchhook/lookupsim"
)

// PaymentsDir is where the file sink writes payment day files, under
// EXPORT_DIR (one day file a UTC day: EXPORT_DIR/payments/YYYY-MM-DD.ndjson).
const PaymentsDir = "payments"

// demoCPF is a CPF with valid check digits that belongs to no one in the
// demo (the well-known test number).
const demoCPF = "52998224725"

// PaymentFlow is one simulated outcome and the webhook body it triggered.
type PaymentFlow struct {
	Name  string // "deposit paid", …
	TxID  string
	Event string // the X-Service-Event / body event name
	Body  []byte // exactly what the simulator sent
}

// runPaymentFlows creates a deposit and pays it, a withdrawal and receives
// it, another and refunds it, each through the gateway client, and returns
// what the simulator sent for each.
func runPaymentFlows(ctx context.Context, sim *lookupsim.Server, stdout io.Writer) ([]PaymentFlow, error) {
	c := gateway.New(sim.URL(), sim.URL(), "", nil)
	first, last, doc := "Ana", "Lima", demoCPF
	steps := []struct {
		name, action string
		deposit      bool
		amount       gateway.Amount
	}{
		{"deposit paid", gateway.Pay, true, "10.50"},
		{"withdrawal paid", gateway.Receive, false, "3.00"},
		{"withdrawal failed", gateway.Refund, false, "4.25"},
	}
	var flows []PaymentFlow
	for _, st := range steps {
		var reply []byte
		var err error
		if st.deposit {
			reply, err = c.CreateDeposit(ctx, gateway.Deposit{Amount: st.amount, MerchantTransactionID: gateway.NewUUID(),
				FirstName: first, LastName: last, Email: "ana@example.com", DocumentNumber: doc,
				Message: "batchhook demo", IPAddress: "127.0.0.1", PhoneNumber: "+5500000000000"})
		} else {
			reply, err = c.CreateWithdrawal(ctx, gateway.Withdrawal{MerchantTransactionID: gateway.NewUUID(), Amount: st.amount,
				PixKeyType: "email", PixKeyValue: "ana@example.com", PixMessage: "batchhook demo",
				FirstName: first, LastName: last, DocumentNumber: doc})
		}
		if err != nil {
			return nil, fmt.Errorf("%s: create: %w", st.name, err)
		}
		s, err := gateway.Summarize(reply)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", st.name, err)
		}
		ref := s.QRCode
		if st.deposit {
			ref = s.ProcessorTransactionID
		}
		u, err := gateway.SimulationURL(ref, sim.URL(), st.action)
		if err != nil {
			return nil, fmt.Errorf("%s: simulation URL: %w", st.name, err)
		}
		if _, err := c.Simulate(ctx, u); err != nil {
			return nil, fmt.Errorf("%s: simulate %s: %w", st.name, st.action, err)
		}
		sent := sim.PaymentEvents(s.ID)
		if len(sent) != 1 {
			return nil, fmt.Errorf("%s: the simulator triggered %d events, want 1", st.name, len(sent))
		}
		var ev struct {
			Event string `json:"event"`
		}
		if err := json.Unmarshal(sent[0], &ev); err != nil {
			return nil, fmt.Errorf("%s: decode the simulator's event: %w", st.name, err)
		}
		fmt.Fprintf(stdout, "sandbox: %s %s %s → %s\n", s.Flow, s.ID, s.Amount, ev.Event)
		flows = append(flows, PaymentFlow{Name: st.name, TxID: s.ID, Event: ev.Event, Body: sent[0]})
	}
	return flows, nil
}

// dayLine is what the demo reads of a day-file line.
type dayLine struct {
	Seq        uint64          `json:"seq"`
	Event      string          `json:"event"`
	BodySHA256 string          `json:"body_sha256"`
	Body       json.RawMessage `json:"body"`
}

// checkPaymentDayFiles reads every day file under dir and checks that each
// flow's event is there exactly once: its event name, body_sha256 equal to
// the SHA-256 of the bytes the simulator sent, and its body those bytes
// compacted. It returns the files that hold them.
func checkPaymentDayFiles(dir string, flows []PaymentFlow) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.ndjson"))
	if err != nil {
		return nil, fmt.Errorf("list day files: %w", err)
	}
	sort.Strings(files)
	count := make(map[int]int)
	holders := make(map[string]bool)
	for _, f := range files {
		lines, err := readDayFile(f)
		if err != nil {
			return nil, err
		}
		for _, l := range lines {
			for i, fl := range flows {
				sum := sha256.Sum256(fl.Body)
				if l.BodySHA256 != hex.EncodeToString(sum[:]) {
					continue
				}
				var compact bytes.Buffer
				if err := json.Compact(&compact, fl.Body); err != nil || !bytes.Equal(compact.Bytes(), l.Body) || l.Event != fl.Event {
					return nil, fmt.Errorf("%s: line seq %d has the event's hash but not its name or body", fl.Name, l.Seq)
				}
				count[i]++
				holders[f] = true
			}
		}
	}
	var missing, twice []string
	for i, fl := range flows {
		switch count[i] {
		case 0:
			missing = append(missing, fl.Name)
		case 1:
		default:
			twice = append(twice, fl.Name)
		}
	}
	if len(missing) > 0 || len(twice) > 0 {
		return nil, fmt.Errorf("day files in %s: missing %v, more than once %v", dir, missing, twice)
	}
	out := make([]string, 0, len(holders))
	for f := range holders {
		out = append(out, f)
	}
	sort.Strings(out)
	return out, nil
}

// readDayFile decodes one day file's lines. A line that is not JSON is an
// error; WaitPaymentDayFiles looks again, so a write seen half-done is not
// final.
func readDayFile(path string) ([]dayLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open day file: %w", err)
	}
	defer f.Close()
	var out []dayLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var l dayLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("day file %s: a line is not JSON: %w", filepath.Base(path), err)
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read day file %s: %w", filepath.Base(path), err)
	}
	return out, nil
}

// WaitPaymentDayFiles polls checkPaymentDayFiles until it passes, ctx ends
// or timeout passes (then the last reason is the error).
func WaitPaymentDayFiles(ctx context.Context, dir string, flows []PaymentFlow, timeout time.Duration) ([]string, error) {
	deadline := time.NewTimer(max(timeout, 0))
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		files, err := checkPaymentDayFiles(dir, flows)
		if err == nil {
			return files, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("interrupted before the payment events were delivered: %w", err)
		case <-deadline.C:
			return nil, fmt.Errorf("payment events not delivered in time: %w", err)
		case <-tick.C:
		}
	}
}

// describeFlows is the demo's summary of the events delivered.
func describeFlows(flows []PaymentFlow) string {
	names := make([]string, len(flows))
	for i, f := range flows {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}
