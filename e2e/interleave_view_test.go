package e2e

// What each sink holds, as a receiver that deduplicates on message ids
// sees it, against the export on disk:
//   - I1: for each batch and sink, the newest version's messages are all
//     there under the ids messageID gives, each carrying its own batch's
//     part, nothing after them; the items hash to the manifest the sink
//     got; with the items of erased CPFs left out (an erasure does not
//     reach into sinks) they are results.ndjson line for line, and the
//     manifest is manifest.json but for the counts an erasure changes;
//   - I4: a message id never comes with two different bodies, whatever
//     the receiver answered to the first (Standard Webhooks: the same id
//     is the same message, sent again).

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/batchhook/batchhook/admin"
	"github.com/batchhook/batchhook/cpf"
	"github.com/batchhook/batchhook/demo"
	"github.com/batchhook/batchhook/export"
	"github.com/batchhook/batchhook/sink/httpsink"
)

type rawMsg = jetstream.RawStreamMsg

// messageID is the id both sinks give to one message of version v of a
// batch's export: part is an http part number, a nats item index or
// "manifest". The batch id's "%" and ":" are percent-encoded, so that no
// two batches or versions share an id. It is the one place that knows the
// id scheme, written from docs/sinks.md's words, not from the sinks' code.
func messageID(batchID string, v int, part string) string {
	id := strings.NewReplacer("%", "%25", ":", "%3A").Replace(batchID)
	if v > 0 {
		return id + ":r" + strconv.Itoa(v) + ":" + part
	}
	return id + ":" + part
}

// exportVersion is the version of an export: the manifest's "version"
// when it has one, else the batch's refetch count.
func exportVersion(manifest []byte, refetches int) int {
	var m struct {
		Version *int `json:"version"`
	}
	if json.Unmarshal(manifest, &m) == nil && m.Version != nil {
		return *m.Version
	}
	return refetches
}

// diskExport is a published export as read back.
type diskExport struct {
	manifest []byte
	items    [][]byte // the lines of results.ndjson, without "\n"
}

func readExport(dir string) (*diskExport, error) {
	m, err := os.ReadFile(filepath.Join(dir, export.ManifestFile))
	if err != nil {
		return nil, err
	}
	r, err := os.ReadFile(filepath.Join(dir, export.ResultsFile))
	if err != nil {
		return nil, err
	}
	return &diskExport{manifest: m, items: splitLines(r)}, nil
}

func splitLines(b []byte) [][]byte {
	if len(b) == 0 {
		return nil
	}
	return bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
}

// sinkView is one version of a batch as a sink holds it.
type sinkView struct {
	items      [][]byte
	manifest   []byte // the last one the sink got (http: compacted)
	problems   []string
	incomplete bool // a message is missing or its id was taken: the items cannot be compared
}

// listedDelivered reports whether an erasure record lists sink as having
// received version v of batch id whole before the erasure rewrote it: a
// delivered delivery then stays at that version.
func (w *world) listedDelivered(erasures []admin.ErasureView, id, sink string, v int) bool {
	for _, e := range erasures {
		for _, b := range e.Batches {
			if b.BatchID != id {
				continue
			}
			for _, s := range b.Sinks {
				if s.Sink == sink && s.Received == "delivered" && s.Version == v {
					return true
				}
			}
		}
	}
	return false
}

// checkSinks is I1 for every batch exported or purged, at both sinks.
func (w *world) checkSinks(rows map[string]admin.BatchView, disk map[string]*diskExport, httpMsgs []demo.Message, stream []*rawMsg) {
	erasures := w.erasureList()
	firstHTTP := map[string]demo.Message{} // what a receiver deduplicating on webhook-id kept
	for _, m := range httpMsgs {
		if _, dup := firstHTTP[m.ID]; !dup && m.Err == "" && m.Status/100 == 2 {
			firstHTTP[m.ID] = m
		}
	}
	firstNATS := map[string]*rawMsg{} // what the stream kept first
	for _, m := range stream {
		if id := m.Header.Get("Nats-Msg-Id"); firstNATS[id] == nil {
			firstNATS[id] = m
		}
	}
	for _, id := range sortedKeys(rows) {
		row, x := rows[id], disk[id]
		if row.State != "exported" && row.State != "purged" {
			continue
		}
		for _, sink := range []string{"http", "nats"} {
			i := slices.IndexFunc(row.Deliveries, func(d admin.DeliveryView) bool { return d.Sink == sink })
			if i < 0 {
				if row.State == "exported" {
					w.violate("I1", id, sink, "the exported batch has no delivery to the sink")
				}
				continue
			}
			del := row.Deliveries[i]
			if del.State != "delivered" {
				continue // failed: I3 says so
			}
			v := row.ExportVersion
			if x != nil {
				v = exportVersion(x.manifest, row.ExportVersion)
			}
			switch {
			case del.Version > v:
				w.violate("I1", id, sink, "the delivery sent version %d, newer than the export's %d", del.Version, v)
				continue
			case del.Version < v && !w.listedDelivered(erasures, id, sink, del.Version):
				w.violate("I1", id, sink, "the delivery sent version %d, the export is version %d, and no erasure lists the sink as having received version %d", del.Version, v, del.Version)
				continue
			case del.Version < v:
				// Delivered before an erasure rewrote the export, and listed
				// by it: the sink keeps that version whole (checked against
				// its own manifest), the operator erases there.
				x = nil
			}
			var sv sinkView
			if sink == "http" {
				sv = httpView(firstHTTP, id, del.Version)
			} else {
				sv = natsView(firstNATS, id, del.Version)
			}
			w.checkView(id, sink, del.Version, sv, x)
		}
	}
}

func httpView(first map[string]demo.Message, id string, v int) sinkView {
	var sv sinkView
	var parts []httpsink.Part
	for k := 1; ; k++ { // the parts in order, as far as they go
		mid := messageID(id, v, strconv.Itoa(k))
		m, ok := first[mid]
		if !ok {
			if k == 1 {
				sv.problems, sv.incomplete = append(sv.problems, fmt.Sprintf("version %d: part 1 (%s) was never accepted", v, mid)), true
			}
			break
		}
		p, err := httpsink.DecodePart(m.Body)
		if err == nil && (p.Data.BatchID != id || p.Data.Part != k) {
			err = fmt.Errorf("the id was taken by part %d of batch %s", p.Data.Part, p.Data.BatchID)
		}
		if err != nil {
			sv.problems, sv.incomplete = append(sv.problems, fmt.Sprintf("%s: %v", mid, err)), true
			break
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return sv
	}
	for k, p := range parts {
		if k > 0 && p.Data.Parts != parts[k-1].Data.Parts {
			sv.problems = append(sv.problems, fmt.Sprintf("from part %d on the parts say %d parts, before %d", k+1, p.Data.Parts, parts[k-1].Data.Parts))
		}
		if k > 0 && !bytes.Equal(p.Data.Manifest, parts[k-1].Data.Manifest) {
			sv.problems = append(sv.problems, fmt.Sprintf("from part %d on the parts carry another manifest (%s, before %s)",
				k+1, manifestBrief(p.Data.Manifest), manifestBrief(parts[k-1].Data.Manifest)))
		}
		for _, it := range p.Data.Items {
			sv.items = append(sv.items, it)
		}
	}
	last := parts[len(parts)-1]
	sv.manifest = last.Data.Manifest
	switch n := len(parts); {
	case n < last.Data.Parts:
		sv.problems, sv.incomplete = append(sv.problems, fmt.Sprintf("part %d of %d (%s) was never accepted",
			n+1, last.Data.Parts, messageID(id, v, strconv.Itoa(n+1)))), true
	case n > last.Data.Parts:
		sv.problems = append(sv.problems, fmt.Sprintf("%d parts were accepted, the last says there are %d", n, last.Data.Parts))
	}
	return sv
}

func natsView(first map[string]*rawMsg, id string, v int) sinkView {
	var sv sinkView
	mid := messageID(id, v, "manifest")
	mm := first[mid]
	switch {
	case mm == nil:
		sv.problems, sv.incomplete = append(sv.problems, fmt.Sprintf("version %d: the manifest message (%s) is not in the stream", v, mid)), true
		return sv
	case mm.Header.Get("Batchhook-Batch-Id") != id || mm.Header.Get("Batchhook-Kind") != "manifest":
		sv.problems, sv.incomplete = append(sv.problems, fmt.Sprintf("id %s was taken by a %s message of batch %s",
			mid, mm.Header.Get("Batchhook-Kind"), mm.Header.Get("Batchhook-Batch-Id"))), true
		return sv
	}
	var m export.Manifest
	_ = json.Unmarshal(mm.Data, &m)
	sv.manifest = mm.Data
	var missing []int
	var taken []string
	for i := 0; i < int(m.Items); i++ {
		mid := messageID(id, v, strconv.Itoa(i))
		msg := first[mid]
		switch {
		case msg == nil:
			missing = append(missing, i)
		case msg.Header.Get("Batchhook-Batch-Id") != id || msg.Header.Get("Batchhook-Index") != strconv.Itoa(i):
			taken = append(taken, fmt.Sprintf("id %s by item %s of batch %s", mid, msg.Header.Get("Batchhook-Index"), msg.Header.Get("Batchhook-Batch-Id")))
		case msg.Sequence > mm.Sequence:
			sv.problems = append(sv.problems, fmt.Sprintf("item %d was stored after the manifest", i))
		default:
			sv.items = append(sv.items, msg.Data)
		}
	}
	sv.incomplete = len(missing)+len(taken) > 0
	if len(missing) > 0 {
		sv.problems = append(sv.problems, fmt.Sprintf("%d of the %d item messages are not in the stream (first: index %d)", len(missing), m.Items, missing[0]))
	}
	if len(taken) > 0 {
		sv.problems = append(sv.problems, fmt.Sprintf("%d of the %d item ids were taken by another message, e.g. %s", len(taken), m.Items, taken[0]))
	}
	if x := first[messageID(id, v, strconv.Itoa(int(m.Items)))]; x != nil && x.Header.Get("Batchhook-Batch-Id") == id {
		sv.problems = append(sv.problems, fmt.Sprintf("an item message %d is in the stream, beyond the %d items its manifest counts (%s)",
			m.Items, m.Items, itemBrief(x.Data)))
	}
	return sv
}

// checkView compares one sink's view with its own manifest and with the
// export on disk (x; nil when the export is gone).
func (w *world) checkView(id, sink string, v int, sv sinkView, x *diskExport) {
	for _, p := range sv.problems {
		w.violate("I1", id, sink, "%s", p)
	}
	if sv.manifest == nil || sv.incomplete {
		return
	}
	var m export.Manifest
	_ = json.Unmarshal(sv.manifest, &m)
	if sum := itemsSHA256(sv.items); int64(len(sv.items)) != m.Items || sum != m.SHA256 {
		w.violate("I1", id, sink, "version %d: the %d items received do not match the manifest received (%s; the items hash to %.12s)", v, len(sv.items), manifestBrief(sv.manifest), sum)
	}
	if x == nil {
		return
	}
	if diff := manifestDiff(sv.manifest, x.manifest); diff != "" {
		w.violate("I1", id, sink, "version %d: the manifest received differs from manifest.json beyond what an erasure changes: %s", v, diff)
	}
	kept := slices.DeleteFunc(slices.Clone(sv.items), func(it []byte) bool {
		c := itemCPFOf(it)
		return w.erased[c] && !w.unrewritten(c, id)
	})
	if diff := itemDiff(kept, x.items); diff != "" {
		w.violate("I1", id, sink, "version %d, erased items left out: %s", v, diff)
	}
}

// checkIDs is I4 for both sinks. The ids two bodies came under are
// counted by sink and pair of batches, and reported with one example.
func (w *world) checkIDs(httpMsgs []demo.Message, nats []*rawMsg) {
	type clash struct {
		sink, a, b, example string
		ids                 int
	}
	var clashes []*clash
	byKey := map[string]*clash{}
	add := func(sink, a, b, example string) {
		k := sink + "\x00" + a + "\x00" + b
		if byKey[k] == nil {
			byKey[k] = &clash{sink: sink, a: a, b: b, example: example}
			clashes = append(clashes, byKey[k])
		}
		byKey[k].ids++
	}
	first, told := map[string]demo.Message{}, map[string]bool{}
	for _, m := range httpMsgs {
		prev, ok := first[m.ID]
		switch {
		case m.Err != "":
		case !ok:
			first[m.ID] = m
		case !bytes.Equal(prev.Body, m.Body) && !told[m.ID]:
			told[m.ID] = true
			a, _ := httpsink.DecodePart(prev.Body)
			b, _ := httpsink.DecodePart(m.Body)
			add("http", a.Data.BatchID, b.Data.BatchID, fmt.Sprintf("id %s: %s, answered %d; then %s, answered %d",
				m.ID, partBrief(a), prev.Status, partBrief(b), m.Status))
		}
	}
	firstNATS := map[string]*rawMsg{}
	for _, m := range nats {
		id := m.Header.Get("Nats-Msg-Id")
		prev := firstNATS[id]
		switch {
		case prev == nil:
			firstNATS[id] = m
		case (!bytes.Equal(prev.Data, m.Data) || prev.Header.Get("Batchhook-Batch-Id") != m.Header.Get("Batchhook-Batch-Id")) && !told["nats "+id]:
			told["nats "+id] = true
			add("nats", prev.Header.Get("Batchhook-Batch-Id"), m.Header.Get("Batchhook-Batch-Id"),
				fmt.Sprintf("id %s: %s; then %s", id, natsBrief(prev), natsBrief(m)))
		}
	}
	for _, c := range clashes {
		who := "batch " + c.a + " sent them again with other content"
		if c.a != c.b {
			who = "batches " + c.a + " and " + c.b + " share them"
		}
		w.violate("I4", c.b, c.sink, "%s came with two bodies (%s); e.g. %s", plural(c.ids, "message id", "message ids"), who, c.example)
	}
}

// streamNow reads the whole stream, on a connection of its own.
func (w *world) streamNow() []*rawMsg {
	_, js := natsJS(w.t, w.nats.url())
	st, err := js.Stream(context.Background(), "RESULTS")
	if err != nil {
		w.fatalf("the stream: %v", err)
	}
	return streamMessages(w.t, st)
}

func itemsSHA256(items [][]byte) string {
	h := sha256.New()
	for _, it := range items {
		h.Write(it)
		h.Write([]byte("\n"))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// manifestDiff names the members of two manifests that differ, leaving out
// items, sha256 and erased_items, which an erasure changes.
func manifestDiff(got, want []byte) string {
	var a, b map[string]any
	if json.Unmarshal(got, &a) != nil || json.Unmarshal(want, &b) != nil {
		return "a manifest does not parse"
	}
	var diff []string
	for _, k := range sortedKeys(mergeKeys(a, b)) {
		if k != "items" && k != "sha256" && k != "erased_items" && !reflect.DeepEqual(a[k], b[k]) {
			diff = append(diff, fmt.Sprintf("%s %v, want %v", k, a[k], b[k]))
		}
	}
	return strings.Join(diff, "; ")
}

func mergeKeys(a, b map[string]any) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// itemDiff says briefly how two item lists differ: where, and what is
// missing or extra, the CPF masked; "" when they are equal.
func itemDiff(got, want [][]byte) string {
	i := 0
	for i < len(got) && i < len(want) && bytes.Equal(got[i], want[i]) {
		i++
	}
	if i == len(got) && i == len(want) {
		return ""
	}
	head := fmt.Sprintf("the sink has %d items, results.ndjson %d; at item %d ", len(got), len(want), i)
	switch {
	case i == len(got) || i+1 < len(want) && bytes.Equal(got[i], want[i+1]):
		return head + "the sink lacks " + itemBrief(want[i])
	case i == len(want) || i+1 < len(got) && bytes.Equal(got[i+1], want[i]):
		return head + "the sink has an extra " + itemBrief(got[i])
	}
	return head + "the sink has " + itemBrief(got[i]) + " where the export has " + itemBrief(want[i])
}

func itemCPFOf(item []byte) string {
	var it struct {
		CPF string `json:"cpf"`
	}
	_ = json.Unmarshal(item, &it)
	d, _ := cpf.Normalize(it.CPF)
	return d
}

func itemBrief(item []byte) string {
	var it struct {
		CPF    string `json:"cpf"`
		Result string `json:"result"`
	}
	_ = json.Unmarshal(item, &it)
	return fmt.Sprintf("{cpf %s, %s}", cpf.Mask(it.CPF), it.Result)
}

func manifestBrief(raw []byte) string {
	var m export.Manifest
	_ = json.Unmarshal(raw, &m)
	return fmt.Sprintf("manifest items=%d erased_items=%d sha256=%.12s", m.Items, m.ErasedItems, m.SHA256)
}

func partBrief(p httpsink.Part) string {
	return fmt.Sprintf("batch %s part %d/%d with %d items, %s", p.Data.BatchID, p.Data.Part, p.Data.Parts, len(p.Data.Items), manifestBrief(p.Data.Manifest))
}

func natsBrief(m *rawMsg) string {
	if m.Header.Get("Batchhook-Kind") == "manifest" {
		return "batch " + m.Header.Get("Batchhook-Batch-Id") + " " + manifestBrief(m.Data)
	}
	return fmt.Sprintf("batch %s item %s %s", m.Header.Get("Batchhook-Batch-Id"), m.Header.Get("Batchhook-Index"), itemBrief(m.Data))
}
