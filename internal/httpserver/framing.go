package httpserver

// Where each request on a connection begins and ends, as net/http reads it.
//
// A request carrying both Content-Length and Transfer-Encoding can be
// framed two ways: a proxy in front that goes by Content-Length forwards
// bytes that net/http, going by the chunked coding, reads as a second
// request the proxy never saw (request smuggling). net/http answers such a
// request and keeps the connection, and never shows a handler that both
// fields came: it drops Content-Length from the header map when the body is
// chunked, and Transfer-Encoding always. So the check reads the raw bytes
// as they pass from the socket to net/http (conn.go), and framing follows
// them: each request's line and header block, then its body (by
// Content-Length, or chunk by chunk), so that it finds the next header
// block on a kept-alive connection exactly where net/http does.
//
// It holds a fixed 152 bytes whatever it reads (no line, header or body is
// buffered), so memory per connection stays bounded. Where the
// bytes break a rule net/http enforces (an unsupported coding, a bad
// length, a malformed chunk), it stops following them: net/http refuses
// that request itself and closes the connection. The fuzz test holds it to
// net/http's own reading of the same bytes.

// state is where in the stream the next byte falls.
type state uint8

const (
	stStart          state = iota // before a request line (skipping the CR/LF net/http skips after a POST)
	stRequestLine                 // in the request line
	stLineStart                   // at the start of a header line, or of the blank line that ends the block
	stLineStartCR                 // after a CR at the start of a header line
	stHeaderLine                  // in a header line
	stBody                        // in a body of known length
	stChunkSize                   // in a chunk-size line, in the hex digits
	stChunkSizeWS                 // in a chunk-size line, in the white space after the digits
	stChunkExt                    // in a chunk-size line, in a chunk extension
	stChunkCR                     // after the CR that must end a chunk-size line
	stChunkData                   // in a chunk's data
	stChunkDataCR                 // after a chunk's data, where its CR must be
	stChunkDataLF                 // after that CR
	stTrailerStart                // at the start of a trailer line, or of the blank line after the last chunk
	stTrailerStartCR              // after a CR there
	stTrailerLine                 // in a trailer line
	stLost                        // past something net/http refuses; nothing more is followed
	stRefused                     // a header block named both fields; nothing after it is passed on
)

// field is the framing field a header line's value belongs to.
type field uint8

const (
	fieldOther field = iota
	fieldLength
	fieldCoding
)

// The two names, lower case.
const (
	nameLength = "content-length"
	nameCoding = "transfer-encoding"
)

// maxName is the longest name worth keeping: the longer of the two.
const maxName = len(nameCoding)

// maxLength is the largest Content-Length net/http accepts (63 bits).
const maxLength = 1<<63 - 1

// framing follows one connection's requests. Its zero value is at the
// start of a connection.
type framing struct {
	st    state
	pendR bool // a CR came last in a line: whether it ends the line depends on the next byte

	// Before and in the request line.
	skip     uint8 // CR/LF bytes net/http still skips before the request line
	lastPOST bool  // the request before was a POST (net/http then skips up to 4 CR/LF)
	spaces   uint8 // spaces seen in the request line, up to 2
	post     int8  // how much of "POST" the method has matched; -1 when it is not POST
	proto    [8]byte
	protoLen uint8 // bytes of the version kept; more than len(proto) means too long
	coding   bool  // Transfer-Encoding applies (HTTP/1.1 or later)

	// The header line in hand.
	cont     bool // it continues the previous line's value (begins with SP or HT)
	colon    bool // its first colon has passed
	name     [maxName]byte
	nameLen  int   // bytes of the name kept; maxName+1 when the name is none of ours
	lead     bool  // white space before the name
	trail    bool  // white space after it
	cur      field // the field whose value this line (or the line it continues) holds
	named    [2]bool
	lengthSt uint8 // the Content-Length value in hand: see lengthByte
	lengthN  uint64
	lengthD  uint64 // its digits
	codingSt uint8  // the Transfer-Encoding value in hand: see codingByte

	// The header block's framing fields.
	lengths   uint8 // Content-Length fields, up to 2
	lengthBad bool  // one was not a number, or two differed
	length    uint64
	lengthLen uint64
	codings   uint8 // Transfer-Encoding fields, up to 2
	chunked   bool  // the last one was exactly "chunked"

	// The body.
	left   uint64 // bytes of the body, or of the chunk, still to come
	digits uint8  // hex digits of the chunk size
	size   uint64

	// Counts, for tests: header blocks begun and ended, requests ended.
	blocks, headers, requests uint64
}

// feed follows p, the next bytes read from the connection. It returns how
// many of them net/http may have: all of them, or, when a header block
// names both Content-Length and Transfer-Encoding (or, before HTTP/1.1,
// Transfer-Encoding at all), those up to the end of the name that makes it
// so (refused is then true, and every later call returns 0).
// net/http so never sees that header block whole: it answers 400 and
// closes, and no byte after it is ever read as a request.
func (f *framing) feed(p []byte) (n int, refused bool) {
	for i := 0; i < len(p); i++ {
		switch f.st {
		case stBody:
			k := min(uint64(len(p)-i), f.left)
			f.left -= k
			i += int(k) - 1
			if f.left == 0 {
				f.endRequest()
			}
		case stChunkData:
			k := min(uint64(len(p)-i), f.left)
			f.left -= k
			i += int(k) - 1
			if f.left == 0 {
				f.st = stChunkDataCR
			}
		case stLost:
			return len(p), false
		case stRefused:
			return i, true
		default:
			f.step(p[i])
			if f.st == stRefused {
				return i + 1, true
			}
		}
	}
	return len(p), f.st == stRefused // p empty after a refusal: still refused
}

// refused reports whether a header block named both fields.
func (f *framing) refused() bool { return f.st == stRefused }

// step follows one byte outside a body's data.
func (f *framing) step(c byte) {
	switch f.st {
	case stStart:
		if f.skip > 0 && (c == '\r' || c == '\n') {
			f.skip--
			return
		}
		f.beginRequest()
		f.requestLine(c)
	case stRequestLine:
		f.requestLine(c)
	case stLineStart:
		switch c {
		case '\n':
			f.endBlock()
		case '\r':
			f.st = stLineStartCR
		default:
			f.beginLine(c == ' ' || c == '\t')
			f.headerByte(c)
		}
	case stLineStartCR:
		if c == '\n' {
			f.endBlock()
			return
		}
		f.beginLine(false)
		f.headerByte('\r')
		f.headerLine(c)
	case stHeaderLine:
		f.headerLine(c)
	case stChunkSize:
		switch h := unhex(c); {
		case h >= 0:
			if f.digits == 16 {
				f.st = stLost // net/http: chunk length too large
				return
			}
			f.digits++
			f.size = f.size<<4 | uint64(h)
		case f.digits == 0:
			f.st = stLost // an empty chunk size
		case c == ';':
			f.st = stChunkExt
		case c == ' ' || c == '\t':
			f.st = stChunkSizeWS
		case c == '\r':
			f.st = stChunkCR
		default:
			f.st = stLost
		}
	case stChunkSizeWS:
		switch c {
		case ' ', '\t':
		case '\r':
			f.st = stChunkCR
		default:
			f.st = stLost // net/http trims white space at the end of the line only
		}
	case stChunkExt:
		switch c {
		case '\r':
			f.st = stChunkCR
		case '\n':
			f.st = stLost // net/http: a chunk line ends with CRLF
		}
	case stChunkCR:
		switch {
		case c != '\n':
			f.st = stLost // net/http: a CR only at the end of a chunk line
		case f.size == 0:
			f.st = stTrailerStart
		default:
			f.left, f.st = f.size, stChunkData
		}
	case stChunkDataCR:
		f.st = stLost
		if c == '\r' {
			f.st = stChunkDataLF
		}
	case stChunkDataLF:
		f.st = stLost
		if c == '\n' {
			f.st, f.digits, f.size = stChunkSize, 0, 0
		}
	case stTrailerStart:
		switch c {
		case '\n':
			f.endRequest()
		case '\r':
			f.st = stTrailerStartCR
		default:
			f.st = stTrailerLine
		}
	case stTrailerStartCR:
		switch c {
		case '\n':
			f.endRequest()
		default:
			f.st = stTrailerLine
		}
	case stTrailerLine:
		if c == '\n' {
			f.st = stTrailerStart
		}
	}
}

// beginRequest clears the last request's fields at its successor's first
// byte.
func (f *framing) beginRequest() {
	*f = framing{st: stRequestLine, blocks: f.blocks + 1, headers: f.headers, requests: f.requests}
}

// requestLine follows the request line: "METHOD SP URI SP VERSION", cut at
// the first two spaces as net/http cuts it. Only whether the method is
// POST and the version matter here.
func (f *framing) requestLine(c byte) {
	if f.pendR {
		f.pendR = false
		if c == '\n' {
			f.endRequestLine()
			return
		}
		f.requestByte('\r')
	}
	switch c {
	case '\r':
		f.pendR = true
	case '\n':
		f.endRequestLine()
	default:
		f.requestByte(c)
	}
}

func (f *framing) requestByte(c byte) {
	switch {
	case f.spaces < 2 && c == ' ':
		f.spaces++
	case f.spaces == 0:
		if f.post >= 0 && int(f.post) < len("POST") && c == "POST"[f.post] {
			f.post++
		} else {
			f.post = -1
		}
	case f.spaces == 2:
		if int(f.protoLen) < len(f.proto) {
			f.proto[f.protoLen] = c
		}
		f.protoLen = min(f.protoLen+1, uint8(len(f.proto))+1)
	}
}

// endRequestLine reads the version as net/http's ParseHTTPVersion does:
// "HTTP/" and two single digits. Transfer-Encoding applies from 1.1 on;
// net/http refuses a line it cannot cut or read the version of.
func (f *framing) endRequestLine() {
	v := f.proto[:]
	if f.spaces < 2 || int(f.protoLen) != len(v) || string(v[:5]) != "HTTP/" || v[6] != '.' || !isDigit(v[5]) || !isDigit(v[7]) {
		f.st = stLost
		return
	}
	major, minor := v[5]-'0', v[7]-'0'
	f.coding = major > 1 || major == 1 && minor >= 1
	f.lastPOST = f.post == int8(len("POST"))
	f.st = stLineStart
}

// beginLine starts a header line: one that begins with SP or HT continues
// the value of the line before (obsolete line folding, which net/http
// still reads).
func (f *framing) beginLine(cont bool) {
	if !cont {
		f.endField()
		f.cur = fieldOther
	} else {
		f.lengthPiece()
		f.codingPiece()
	}
	f.st, f.cont, f.colon, f.nameLen, f.lead, f.trail = stHeaderLine, cont, false, 0, false, false
}

func (f *framing) headerLine(c byte) {
	if f.pendR {
		f.pendR = false
		if c == '\n' {
			f.endLine()
			return
		}
		f.headerByte('\r')
	}
	switch c {
	case '\r':
		f.pendR = true
	case '\n':
		f.endLine()
	default:
		f.headerByte(c)
	}
}

// headerByte takes one byte of a header line other than its end. The text
// before the line's first colon is a name: for the check, a name with white
// space around it, or on a folded line, counts too (a proxy may read it so,
// and net/http refuses the first anyway); for the framing, only a name as
// net/http keys it.
func (f *framing) headerByte(c byte) {
	if f.colon {
		f.valueByte(c)
		return
	}
	if f.cont {
		f.valueByte(c)
	}
	switch {
	case c == ':':
		f.colon = true
		f.endName()
	case c == ' ' || c == '\t':
		if f.nameLen == 0 {
			f.lead = true
		} else {
			f.trail = true
		}
	case f.nameLen > maxName:
	case f.trail || f.nameLen == maxName:
		f.nameLen = maxName + 1 // white space inside, or too long: none of ours
	default:
		f.name[f.nameLen] = lower(c)
		f.nameLen++
	}
}

// endName marks a name of ours, and refuses the block once both came (or
// Transfer-Encoding before HTTP/1.1).
func (f *framing) endName() {
	if f.nameLen > maxName {
		return
	}
	name, exact := string(f.name[:f.nameLen]), !f.lead && !f.trail && !f.cont
	switch name {
	case nameLength:
		f.named[0] = true
		if exact {
			f.cur, f.lengthSt, f.lengthN, f.lengthD = fieldLength, 0, 0, 0
			f.lengths = min(f.lengths+1, 2)
		}
	case nameCoding:
		f.named[1] = true
		if exact {
			f.cur, f.codingSt = fieldCoding, 0
			f.codings = min(f.codings+1, 2)
		}
	}
	// Both fields; or Transfer-Encoding in HTTP/1.0, which net/http ignores
	// (no body, the connection kept if asked) while a proxy may read a
	// chunked body: RFC 9112 section 6.1 calls that framing faulty too.
	if f.named[0] && f.named[1] || f.named[1] && !f.coding {
		f.st = stRefused
	}
}

func (f *framing) valueByte(c byte) {
	switch f.cur {
	case fieldLength:
		f.lengthByte(c)
	case fieldCoding:
		f.codingByte(c)
	}
}

// endLine ends a header line (its CR LF or LF).
func (f *framing) endLine() {
	if f.cur == fieldCoding && f.codingSt > 0 && f.codingSt < 7 {
		f.codingSt = codingBad // a piece ended inside "chunked"
	}
	if f.cur == fieldLength && (f.lengthSt == 1 || f.lengthSt == 2) {
		f.lengthSt = 3
	}
	f.st = stLineStart
}

// A field's value, as net/http reads it, is its lines' text joined by one
// space, each line trimmed of SP and HT, the start trimmed too. Content-
// Length is then trimmed at both ends and must be decimal digits; Transfer-
// Encoding must be "chunked", any case, with nothing after it (a folded
// line after it, even blank, adds a space).
//
// lengthSt: 0 nothing yet; 1 in digits; 2 white space after them on the
// same line; 3 digits done (only white space may follow); 4 not a number.
func (f *framing) lengthByte(c byte) {
	switch {
	case c == ' ' || c == '\t':
		if f.lengthSt == 1 {
			f.lengthSt = 2
		}
	case isDigit(c) && f.lengthSt <= 1:
		d := uint64(c - '0')
		if f.lengthN > (maxLength-d)/10 {
			f.lengthSt = 4
			return
		}
		f.lengthN, f.lengthD, f.lengthSt = f.lengthN*10+d, f.lengthD+1, 1
	default:
		f.lengthSt = 4
	}
}

func (f *framing) lengthPiece() {
	if f.cur == fieldLength && (f.lengthSt == 1 || f.lengthSt == 2) {
		f.lengthSt = 3
	}
}

// codingSt: 0 nothing yet; 1 to 7 that many letters of "chunked" matched;
// 8 white space after all seven on the same line; codingBad anything else.
const codingBad = 9

func (f *framing) codingByte(c byte) {
	switch {
	case f.codingSt == codingBad:
	case c == ' ' || c == '\t':
		switch {
		case f.codingSt == 7:
			f.codingSt = 8
		case f.codingSt > 0 && f.codingSt < 7:
			f.codingSt = codingBad
		}
	case f.codingSt < 7 && lower(c) == "chunked"[f.codingSt]:
		f.codingSt++
	default:
		f.codingSt = codingBad
	}
}

func (f *framing) codingPiece() {
	if f.cur == fieldCoding && f.codingSt >= 7 && f.codingSt != codingBad {
		f.codingSt = codingBad
	}
}

// endField adds the field in hand, if one of ours, to the block's.
func (f *framing) endField() {
	switch f.cur {
	case fieldLength:
		ok := f.lengthSt >= 1 && f.lengthSt <= 3
		switch {
		case !ok:
			f.lengthBad = true
		case f.lengths == 1:
			f.length, f.lengthLen = f.lengthN, f.lengthD
		case f.lengthN != f.length || f.lengthD != f.lengthLen:
			f.lengthBad = true // net/http refuses two Content-Lengths that differ
		}
	case fieldCoding:
		f.chunked = f.codingSt == 7 || f.codingSt == 8
	}
}

// endBlock decides the body at the blank line, as net/http's
// readTransfer does: chunked when Transfer-Encoding applies, else
// Content-Length bytes, else none.
func (f *framing) endBlock() {
	f.headers++
	f.endField()
	f.cur = fieldOther
	switch {
	case f.lengthBad:
		f.st = stLost // net/http: 400
	case f.coding && f.codings > 0 && (f.codings > 1 || !f.chunked):
		f.st = stLost // net/http: 501
	case f.coding && f.codings == 1:
		f.st, f.digits, f.size = stChunkSize, 0, 0
	case f.lengths > 0 && f.length > 0:
		f.st, f.left = stBody, f.length
	default:
		f.endRequest()
	}
}

// endRequest is the end of a request's body.
func (f *framing) endRequest() {
	f.requests++
	f.st, f.skip = stStart, 0
	if f.lastPOST {
		f.skip = 4
	}
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
