package httpserver

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/batchhook/batchhook/internal/testutil"
)

// The framing check against net/http's own reading of the same bytes.
//
// For any stream of requests: where net/http reads a request (its start,
// the end of its header block, the end of its body), the check finds the
// same three offsets; a header block naming both Content-Length and
// Transfer-Encoding that net/http would read is refused before its end;
// what the check refuses names both (by a second, plain reading of the
// lines); it stops following the bytes only where net/http refuses them
// too; and the result does not depend on how the stream is cut into reads.
// Its memory is fixed by its type (TestFramingHoldsNoBuffer).
func FuzzFraming(f *testing.F) {
	for _, s := range framingSeeds() {
		f.Add([]byte(s), []byte{7, 1, 200, 3})
	}
	f.Fuzz(func(t *testing.T, stream, cuts []byte) {
		tr := traceFraming(stream)
		checkSplits(t, stream, cuts, tr)
		reqs, stop := readAsNetHTTP(stream)
		for i, r := range reqs {
			block := stream[r.start:r.head]
			if mustRefuse(block) {
				if tr.refused < 0 || tr.refused <= r.start || tr.refused >= r.head {
					t.Fatalf("request %d names both fields (or a coding before HTTP/1.1) but was not refused inside its header block [%d,%d) (refused at %d)\n%q", i, r.start, r.head, tr.refused, stream)
				}
				return
			}
			if tr.refused >= 0 && tr.refused <= r.end {
				t.Fatalf("request %d [%d,%d) is to be served, yet refused at %d\n%q", i, r.start, r.end, tr.refused, stream)
			}
			if tr.lost >= 0 && tr.lost < r.end {
				t.Fatalf("stopped following at %d inside request %d [%d,%d), which net/http reads\n%q", tr.lost, i, r.start, r.end, stream)
			}
			if i >= len(tr.ends) || tr.starts[i] != r.start || tr.heads[i] != r.head || tr.ends[i] != r.end {
				t.Fatalf("request %d: net/http reads [%d %d %d], the check found starts %v, header ends %v, ends %v\n%q",
					i, r.start, r.head, r.end, tr.starts, tr.heads, tr.ends, stream)
			}
		}
		if tr.refused >= 0 {
			s := tr.starts[len(tr.starts)-1]
			if len(tr.heads) >= len(tr.starts) || !mustRefuse(stream[s:tr.refused]) {
				t.Fatalf("refused at %d a block begun at %d that does not name both fields (or a coding before HTTP/1.1) before its end\n%q", tr.refused, s, stream)
			}
		}
		if tr.lost >= 0 && stop == nil {
			t.Fatalf("stopped following at %d, but net/http read the whole stream\n%q", tr.lost, stream)
		}
	})
}

// framingTrace is what the check found, fed one byte at a time.
type framingTrace struct {
	starts, heads, ends []int // offsets of each request's start, header end and end
	refused             int   // bytes passed before a refusal; -1 when none
	lost                int   // offset of the byte it stopped following at; -1 when none
}

func traceFraming(stream []byte) framingTrace {
	tr := framingTrace{refused: -1, lost: -1}
	var fr framing
	for i := range stream {
		b, h, r := fr.blocks, fr.headers, fr.requests
		n, refused := fr.feed(stream[i : i+1])
		if fr.blocks > b {
			tr.starts = append(tr.starts, i)
		}
		if refused {
			tr.refused = i + n
			return tr
		}
		if fr.headers > h {
			tr.heads = append(tr.heads, i+1)
		}
		if fr.requests > r {
			tr.ends = append(tr.ends, i+1)
		}
		if fr.st == stLost {
			tr.lost = i
			return tr
		}
	}
	return tr
}

// checkSplits feeds the stream cut where cuts says and expects the result
// of the byte-at-a-time run.
func checkSplits(t *testing.T, stream, cuts []byte, tr framingTrace) {
	t.Helper()
	var fr framing
	passed, refusedAt := 0, -1
	for rest, k := stream, 0; len(rest) > 0; k++ {
		size := len(rest)
		if len(cuts) > 0 {
			size = min(size, int(cuts[k%len(cuts)])+1)
		}
		n, refused := fr.feed(rest[:size])
		if n > size || (!refused && n != size) {
			t.Fatalf("feed of %d bytes passed %d (refused %v)", size, n, refused)
		}
		passed += n
		if refused {
			refusedAt = passed
			if n2, again := fr.feed(rest[n:]); n2 != 0 || !again {
				t.Fatalf("after a refusal, feed passed %d more (refused %v)", n2, again)
			}
			break
		}
		rest = rest[size:]
	}
	if refusedAt != tr.refused {
		t.Fatalf("cut into reads: refused at %d, byte at a time at %d\n%q", refusedAt, tr.refused, stream)
	}
	if tr.refused < 0 && tr.lost < 0 && (int(fr.blocks) != len(tr.starts) || int(fr.headers) != len(tr.heads) || int(fr.requests) != len(tr.ends)) {
		t.Fatalf("cut into reads: %d/%d/%d blocks, headers, requests; byte at a time %d/%d/%d\n%q",
			fr.blocks, fr.headers, fr.requests, len(tr.starts), len(tr.heads), len(tr.ends), stream)
	}
}

// netRequest is a request as net/http read it: offsets of its start, of
// the end of its header block and of the end of its body.
type netRequest struct{ start, head, end int }

// errServerRefuses is a request net/http's server refuses after
// http.ReadRequest accepted it; errServerCloses one after which it closes
// the connection.
var (
	errServerRefuses = errors.New("net/http's server refuses this request")
	errServerCloses  = errors.New("net/http's server closes after this request")
)

// readAsNetHTTP reads stream the way net/http's server reads a
// connection: through a 4 KiB bufio.Reader, skipping up to four CR or LF
// after a POST, with http.ReadRequest, the checks the server adds, and
// each body read to its end. It stops at the end of the stream (stop
// nil), at the first error, or where the server would close the
// connection after the request (errServerCloses).
func readAsNetHTTP(stream []byte) (reqs []netRequest, stop error) {
	cr := &countingReader{r: bytes.NewReader(stream)}
	br := bufio.NewReaderSize(cr, 4096)
	pos := func() int { return cr.n - br.Buffered() }
	lastPOST := false
	for {
		if lastPOST {
			peek, _ := br.Peek(4)
			k := 0
			for k < len(peek) && (peek[k] == '\r' || peek[k] == '\n') {
				k++
			}
			br.Discard(k)
		}
		if _, err := br.Peek(1); err == io.EOF {
			return reqs, nil
		}
		start := pos()
		req, err := http.ReadRequest(br)
		if err != nil {
			return reqs, err
		}
		if err := serverChecks(req); err != nil {
			return reqs, err
		}
		head := pos()
		lastPOST = req.Method == "POST"
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			return reqs, err
		}
		reqs = append(reqs, netRequest{start, head, pos()})
		if req.Close || req.Header.Get("Expect") != "" && !strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
			return reqs, errServerCloses
		}
	}
}

// serverChecks are what net/http's server refuses of a request that
// http.ReadRequest returns (its conn.readRequest and serve) and that bear
// on framing. (Its Host checks do not; ReadRequest drops the field.)
func serverChecks(req *http.Request) error {
	if req.ProtoMajor != 1 {
		return errServerRefuses // 505 (and the HTTP/2 preface, which closes)
	}
	for k := range req.Header {
		if strings.ContainsAny(k, " \t") {
			return errServerRefuses // an invalid field name
		}
	}
	return nil
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// mustRefuse is the plain reading of what the check refuses: a block where
// some line after the first has, before its first colon, content-length,
// and some transfer-encoding, in any case, with spaces or tabs around; or
// one that names transfer-encoding after a request line whose version
// net/http reads as before 1.1.
func mustRefuse(block []byte) bool {
	var length, coding bool
	lines := strings.Split(string(block), "\n")
	_, rest, _ := strings.Cut(strings.TrimSuffix(lines[0], "\r"), " ")
	_, version, _ := strings.Cut(rest, " ")
	major, minor, ok := http.ParseHTTPVersion(version)
	old := ok && (major < 1 || major == 1 && minor < 1)
	for _, l := range lines[1:] {
		name, _, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		switch strings.ToLower(strings.Trim(name, " \t")) {
		case "content-length":
			length = true
		case "transfer-encoding":
			coding = true
		}
	}
	return length && coding || coding && old
}

// framingSeeds are streams of the shapes that matter: pipelined requests
// of each framing, the smuggling shapes, and what net/http refuses.
func framingSeeds() []string {
	hidden := "GET /hidden HTTP/1.1\r\nHost: h\r\n\r\n"
	seeds := []string{
		"GET / HTTP/1.1\r\nHost: h\r\n\r\nGET /2 HTTP/1.1\r\nHost: h\r\n\r\n",
		"POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n",
		"POST /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\nT: v\r\n\r\n" + hidden,
		"POST /a HTTP/1.1\nHost: h\nTransfer-Encoding: Chunked\n\n1\r\na\r\n0\r\n\r\n\r\n\n" + hidden,
		"POST /a HTTP/1.0\r\nHost: h\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\nX: y\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n",
		"POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 05\r\nContent-Length:  05 \r\n\r\nabcde" + hidden,
		"POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nabcdef" + hidden,
		"POST /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n" + hidden,
		"POST /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n \r\n\r\n0\r\n\r\n" + hidden,
		"POST /a HTTP/1.1\r\nHost: h\r\nContent-Length:\r\n 4\r\n\r\nabcd" + hidden,
		"POST /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n0\r\n\r\n" + hidden,
		"POST /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5 \r\nabcde\r\n0  \r\n\r\n" + hidden,
		"POST /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\nabcde\r\n0\r\n\r\n" + hidden,
		"GET / HTTP/1.1\r\nHost: h\r\n\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET /x HTTP/1.1\r\nHost: h\r\nContent-Length: 40\r\n\r\n" + hidden,
	}
	for _, v := range append(testutil.Smuggling("/w", hidden), testutil.MoreSmuggling("/w", hidden)...) {
		seeds = append(seeds, v.Bytes)
	}
	return seeds
}
