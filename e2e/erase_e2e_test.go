package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batchhook/batchhook/cpf"
	"github.com/batchhook/batchhook/export"
	"github.com/batchhook/batchhook/lookupsim"
	"github.com/batchhook/batchhook/store"
)

// grepTree reports the files under root whose bytes hold any of needles.
func grepTree(t *testing.T, root string, needles ...string) []string {
	t.Helper()
	var hits []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, n := range needles {
			if bytes.Contains(data, []byte(n)) {
				hits = append(hits, path)
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// withBase64 adds to needles their base64 forms at each of the three
// alignments (the database keeps raw bodies base64-encoded in JSON): the
// groups that depend on the needle's bytes only.
func withBase64(needles ...string) []string {
	out := append([]string(nil), needles...)
	for _, n := range needles {
		for k := range 3 {
			enc := base64.StdEncoding.EncodeToString(append(make([]byte, k), n...))
			skip := map[int]int{0: 0, 1: 4, 2: 4}[k]
			used := map[int]int{0: 0, 1: 2, 2: 1}[k]
			out = append(out, enc[skip:skip+(len(n)-used)/3*4])
		}
	}
	return out
}

// TestEraseThroughTheBinary is erasure end to end: a person's CPF in
// two exports is erased with `batchhook erase` (a quarantined body that
// carried it holds it masked from the start: nothing of it to erase);
// the exports are rewritten with valid manifests, a second erase touches
// nothing, `erasures list` shows the record without the CPF, and neither
// the logs nor any file under the data dir holds the CPF afterwards.
func TestEraseThroughTheBinary(t *testing.T) {
	t.Parallel()
	s := newSetup(t, lookupsim.Options{})
	const token = "erase-admin-token"
	s.env["BATCHHOOK_ADMIN_TOKEN"] = token
	d := startDaemon(t, s.addr, s.env)
	target := lookupsim.SampleCPFs(1, 4242)[0]
	dotted := target[:3] + "." + target[3:6] + "." + target[6:9] + "-" + target[9:]
	ids := make([]string, 3)
	for i, cpfs := range [][]string{
		append(lookupsim.SampleCPFs(40, 1), target),
		append([]string{target}, lookupsim.SampleCPFs(30, 2)...),
		lookupsim.SampleCPFs(20, 3), // not this person's
	} {
		id, err := s.sim.Submit(cpfs)
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	before := map[string]export.Manifest{}
	for _, id := range ids {
		before[id] = s.waitExport(t, id, d, 20*time.Second)
	}
	untouched, err := os.ReadFile(filepath.Join(s.exports, ids[2], export.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	// A signed but invalid delivery that carries the CPF: quarantined,
	// its body kept masked.
	if code, _ := postSigned(t, s.addr, []byte(`{"event":"batch.completed","status":"completed","note":"`+dotted+`"}`), 1); code != 400 {
		t.Fatalf("invalid delivery answered %d, want 400 (quarantined)", code)
	}
	data := s.env["BATCHHOOK_DATA_DIR"]
	hits := grepTree(t, data, withBase64(target, dotted)...)
	if len(hits) != 2 {
		t.Fatalf("before the erasure the CPF is in %v; want both exports and nothing else (else the test proves nothing, or the quarantine kept it)", hits)
	}
	for _, h := range hits {
		if !strings.HasPrefix(h, s.exports) {
			t.Fatalf("before the erasure the CPF is in %s, outside the exports", h)
		}
	}

	out, errOut, code := runCLIWith(t, d, token, 60*time.Second, "erase", "--cpf", dotted)
	if code != 0 || !strings.Contains(out, ids[0]+": 1 item removed") || !strings.Contains(out, ids[1]+": 1 item removed") {
		t.Fatalf("erase: %d\n%s%s", code, out, errOut)
	}
	for _, id := range ids[:2] {
		dir := filepath.Join(s.exports, id)
		results, err := os.ReadFile(filepath.Join(dir, export.ResultsFile))
		if err != nil {
			t.Fatal(err)
		}
		var m export.Manifest
		raw, _ := os.ReadFile(filepath.Join(dir, export.ManifestFile))
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(results)
		if m.SHA256 != hex.EncodeToString(sum[:]) || m.Items != int64(bytes.Count(results, []byte("\n"))) ||
			m.Items != before[id].Items-1 || m.ErasedItems != 1 {
			t.Fatalf("%s after erasure: manifest %+v does not describe the file (%d lines, was %d items)", id, m, bytes.Count(results, []byte("\n")), before[id].Items)
		}
		if bytes.Contains(results, []byte(target)) {
			t.Fatalf("%s still holds the CPF", id)
		}
	}
	if after, _ := os.ReadFile(filepath.Join(s.exports, ids[2], export.ResultsFile)); !bytes.Equal(after, untouched) {
		t.Fatal("an export without the CPF changed")
	}

	out, errOut, code = runCLIWith(t, d, token, 60*time.Second, "erase", "--cpf", target)
	if code != 0 || !strings.Contains(out, "nothing") || !strings.Contains(out, "previous") {
		t.Fatalf("second erase: %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = runCLIWith(t, d, token, 30*time.Second, "erasures", "list", "--json")
	var list struct {
		Items []struct {
			ID, State, Previous string
			Touched             bool
		} `json:"items"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list.Items) != 2 || !list.Items[0].Touched ||
		list.Items[1].Touched || list.Items[1].Previous != list.Items[0].ID || list.Items[1].State != "done" {
		t.Fatalf("erasures list: %d\n%s%s", code, out, errOut)
	}
	if strings.Contains(out, target) || strings.Contains(out, dotted) {
		t.Fatal("erasures list shows the CPF")
	}
	// A batch exported after the erasure leaves the CPF out at publish.
	late, err := s.sim.Submit(append(lookupsim.SampleCPFs(10, 5), target))
	if err != nil {
		t.Fatal(err)
	}
	if m := s.waitExport(t, late, d, 20*time.Second); m.ErasedItems != 1 || m.Items != 10 {
		t.Fatalf("batch exported after the erasure: manifest %+v; want 10 items, 1 erased", m)
	}
	if ok, err := export.Verify(filepath.Join(s.exports, late)); !ok || err != nil {
		t.Fatalf("late export does not match its manifest: %v", err)
	}
	_, errOut, code = runCLIWith(t, d, token, 30*time.Second, "erase", "--cpf", target[:10]+string('0'+(target[10]-'0'+1)%10))
	if code == 0 || !strings.Contains(errOut, "400") || strings.Contains(errOut, target[:9]) {
		t.Fatalf("erase of a wrong CPF: %d %s", code, errOut)
	}
	d.stop(t)
	logs := d.out.String()
	if !strings.Contains(logs, `"event":"erasure_done"`) {
		t.Fatalf("no erasure_done in the logs:\n%s", logs)
	}
	if strings.Contains(logs, target) || strings.Contains(logs, dotted) {
		t.Fatal("the daemon's logs hold the CPF")
	}
	if hits := grepTree(t, data, withBase64(target, dotted)...); len(hits) != 0 {
		t.Fatalf("after the erasure the CPF is still in %v", hits)
	}
}

// TestAPendingErasureIsFinishedAtStart: the daemon died right after
// recording an erasure (nothing touched yet); the next start finishes it
// before serving.
func TestAPendingErasureIsFinishedAtStart(t *testing.T) {
	t.Parallel()
	s := newSetup(t, lookupsim.Options{})
	d := startDaemon(t, s.addr, s.env)
	target := lookupsim.SampleCPFs(1, 777)[0]
	id, err := s.sim.Submit(append(lookupsim.SampleCPFs(15, 7), target))
	if err != nil {
		t.Fatal(err)
	}
	s.waitExport(t, id, d, 20*time.Second)
	d.stop(t)
	st, err := store.Open(s.env["BATCHHOOK_DATA_DIR"], time.Second)
	if err != nil {
		t.Fatal(err)
	}
	key, err := st.ErasureKey()
	if err == nil {
		_, _, err = st.BeginErasure(cpf.KeyedHash(key, target), time.Now())
	}
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	d = startDaemon(t, s.addr, s.env)
	if !strings.Contains(d.out.String(), `"event":"erasure_done"`) {
		t.Fatalf("the pending erasure was not finished before serving:\n%s", d.out.String())
	}
	results, err := os.ReadFile(filepath.Join(s.exports, id, export.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(results, []byte(target)) || bytes.Count(results, []byte("\n")) != 15 {
		t.Fatalf("after the resumed erasure the export holds %d lines, the CPF: %v", bytes.Count(results, []byte("\n")), bytes.Contains(results, []byte(target)))
	}
	if ok, err := export.Verify(filepath.Join(s.exports, id)); !ok || err != nil {
		t.Fatalf("export does not match its manifest: %v", err)
	}
	d.stop(t)
}
