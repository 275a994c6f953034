package demo

// The demo's `--sink http`: a verifying Standard Webhooks receiver on
// loopback (receiver.go), the daemon pointed at it, and the check that
// what arrived is the export.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/batchhook/batchhook/config"
	"github.com/batchhook/batchhook/daemon"
	"github.com/batchhook/batchhook/export"
	"github.com/batchhook/batchhook/store"
)

// demoPartItems is the demo's HTTP_SINK_MAX_ITEMS: small, so that the
// default 250 CPFs arrive in several parts and the parts show.
const demoPartItems = 100

// demoReceiver is the receiver and the HTTP server it runs on.
type demoReceiver struct {
	recv *Receiver
	srv  *http.Server
	url  string
}

// startDemoReceiver generates a whsec_ secret, serves a verifying receiver
// on a kernel-chosen loopback port and configures cfg to deliver to it.
func startDemoReceiver(cfg *config.Config) (*demoReceiver, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("generate the http sink secret: %w", err)
	}
	secret := "whsec_" + base64.StdEncoding.EncodeToString(key)
	recv, err := NewReceiver(secret, nil)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("bind the demo receiver: %w", err)
	}
	srv := &http.Server{Handler: recv, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	r := &demoReceiver{recv: recv, srv: srv, url: "http://" + ln.Addr().String() + "/hooks/batchhook"}
	cfg.Sinks = "file,http"
	cfg.HTTPSinkURL = r.url
	cfg.HTTPSinkSecret = config.Secret(secret)
	cfg.HTTPSinkMaxItems = demoPartItems
	return r, nil
}

func (r *demoReceiver) close() { _ = r.srv.Close() }

// waitAndCheck waits until the daemon records the delivery of id to the
// http sink (or it fails, or timeout passes), then checks what the
// receiver accepted against the export: every request verified, the parts
// complete, their items byte-equal to results.ndjson and their manifest
// equal to manifest.json. It prints the "delivered:" line.
func (r *demoReceiver) waitAndCheck(ctx context.Context, d *daemon.Daemon, id, exportPath string, timeout time.Duration, stdout io.Writer) error {
	if err := waitDelivery(ctx, d, id, "http", timeout); err != nil {
		return err
	}
	msgs := r.recv.Messages()
	for _, m := range msgs {
		if m.Err != "" {
			return fmt.Errorf("the receiver refused a request (%s): %s", m.ID, m.Err)
		}
	}
	got, err := Assemble(msgs, id)
	if err != nil {
		return fmt.Errorf("the delivered parts: %w", err)
	}
	results, err := os.ReadFile(filepath.Join(exportPath, export.ResultsFile))
	if err != nil {
		return fmt.Errorf("read export: %w", err)
	}
	if !bytes.Equal(got.Results, results) {
		return fmt.Errorf("the %d items delivered differ from the export's results.ndjson", got.Items)
	}
	manifest, err := os.ReadFile(filepath.Join(exportPath, export.ManifestFile))
	if err != nil {
		return fmt.Errorf("read manifest: %w", err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, manifest); err != nil || !bytes.Equal(compact.Bytes(), got.Manifest) {
		return errors.New("the manifest delivered differs from the export's manifest.json")
	}
	fmt.Fprintf(stdout, "delivered: %s (%d parts, %d items, signatures verified)\n", r.url, got.Parts, got.Items)
	return nil
}

// waitDelivery polls the batch's delivery to sink until it is delivered;
// failed, ctx's end or the timeout is an error with the reason.
func waitDelivery(ctx context.Context, d *daemon.Daemon, id, sink string, timeout time.Duration) error {
	deadline := time.NewTimer(max(timeout, 0))
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		ds, err := d.Deliveries(id)
		if err != nil {
			return fmt.Errorf("read the deliveries of %s: %w", id, err)
		}
		var del *store.Delivery
		for i := range ds {
			if ds[i].Sink == sink {
				del = &ds[i]
			}
		}
		switch {
		case del == nil:
			return fmt.Errorf("batch %s has no delivery to %s", id, sink)
		case del.State == store.DeliveryDelivered:
			return nil
		case del.State == store.DeliveryFailed:
			return fmt.Errorf("delivery of %s to %s failed: %s", id, sink, del.LastError)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("interrupted before batch %s was delivered to %s", id, sink)
		case <-deadline.C:
			return fmt.Errorf("batch %s not delivered to %s in time: %s after %d attempts (last error: %s)",
				id, sink, del.State, del.Attempts, del.LastError)
		case <-tick.C:
		}
	}
}
