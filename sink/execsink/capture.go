package execsink

// capture keeps the first limit bytes written to it and counts, then
// discards, the rest. Write never fails and never blocks, so os/exec keeps
// draining the pipe to the end: the command is never stalled on a full
// pipe, and memory stays at limit whatever it prints.
//
// It is not safe for concurrent use; run hands the same pointer to Stdout
// and Stderr, for which os/exec uses a single copying goroutine.
type capture struct {
	buf   []byte
	limit int
	total int64
}

func newCapture(limit int) *capture {
	return &capture{buf: make([]byte, 0, limit), limit: limit}
}

// Write implements io.Writer.
func (c *capture) Write(p []byte) (int, error) {
	c.total += int64(len(p))
	if room := c.limit - len(c.buf); room > 0 {
		c.buf = append(c.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// truncated reports whether output was discarded.
func (c *capture) truncated() bool { return c.total > int64(len(c.buf)) }
