package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Everything lockstepctl prints may come from the server it asks, and a
// server may be hostile (or broken): a terminal acts on what it is sent
// (ESC sequences move the cursor, rewrite lines, set the title, OSC 52
// writes the clipboard; bidirectional controls reorder what is shown), so
// nothing from a server reaches it raw. Two layers:
//
//   - every value placed in a line of text (a table cell, a key, an error
//     message) goes through cell or text, which quote it Go-style when it
//     holds anything but printable characters and spaces, so it cannot
//     break its line or its table either, and clip it to a length;
//   - every byte written to stdout and stderr goes through a termWriter,
//     which escapes what is left: control characters but newline and tab,
//     C1 controls, format characters (bidi, zero width), line and paragraph
//     separators, and bytes that are not UTF-8. Its escapes are JSON's and
//     YAML's own (\u00XX), so -o json and -o yaml stay valid where such a
//     character sits inside a string, the only place it can.

// maxCell is the longest value shown in a table or a line, in bytes: a
// server's names are at most 253 bytes (docs/security.md); longer is
// clipped, so that one value cannot make every row of a table as wide.
const maxCell = 256

// maxMessage is the longest error message or refusal sentence shown.
const maxMessage = 4 << 10

// cell returns a server's value as it may sit in a table or a line.
func cell(s string) string { return clipQuote(s, maxCell) }

// text returns a server's sentence (a refusal, an error message) as it may
// sit in a line.
func text(s string) string { return clipQuote(s, maxMessage) }

func clipQuote(s string, limit int) string {
	suffix := ""
	if len(s) > limit {
		cut := limit
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		suffix = fmt.Sprintf("…(%d more bytes)", len(s)-cut)
		s = s[:cut]
	}
	if !printable(s) {
		return strconv.Quote(s) + suffix
	}
	return s + suffix
}

// printable reports whether s is valid UTF-8 of printable characters and
// ASCII spaces only.
func printable(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 || !unicode.IsPrint(r) {
			return false
		}
		i += size
	}
	return true
}

// safeRune reports whether a terminal may be sent r as it is.
func safeRune(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return true
	case r < 0x20 || r == 0x7f:
		return false
	case r < 0x7f:
		return true
	}
	return unicode.IsGraphic(r) && !unicode.Is(unicode.Cf, r) && r != '\u2028' && r != '\u2029'
}

// termWriter escapes, in everything written through it, what a terminal
// would act on (see above). It holds back the start of a character split
// across writes until the next write or Flush. Once its context is done
// it fails every write, so that rendering a large answer stops when the
// command is interrupted.
type termWriter struct {
	w       io.Writer
	ctx     context.Context
	pending []byte
	buf     []byte
}

func newTermWriter(ctx context.Context, w io.Writer) *termWriter {
	return &termWriter{w: w, ctx: ctx}
}

// Write escapes p and writes it; it reports len(p) on success.
func (t *termWriter) Write(p []byte) (int, error) {
	if err := t.ctx.Err(); err != nil {
		return 0, err
	}
	n := len(p)
	if len(t.pending) > 0 {
		p = append(t.pending, p...)
		t.pending = nil
	}
	out := t.buf[:0]
	for i := 0; i < len(p); {
		c := p[i]
		if c >= 0x20 && c < 0x7f || c == '\n' || c == '\t' {
			out = append(out, c)
			i++
			continue
		}
		if c >= utf8.RuneSelf && !utf8.FullRune(p[i:]) && len(p)-i < utf8.UTFMax {
			t.pending = append(t.pending, p[i:]...)
			break
		}
		r, size := utf8.DecodeRune(p[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			out = fmt.Appendf(out, `\x%02x`, c)
		case safeRune(r):
			out = append(out, p[i:i+size]...)
		case r > 0xffff:
			// A UTF-16 pair, as JSON writes it.
			r1, r2 := utf16.EncodeRune(r)
			out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
		default:
			out = fmt.Appendf(out, `\u%04x`, r)
		}
		i += size
	}
	t.buf = out[:0]
	if err := t.emit(out); err != nil {
		return 0, err
	}
	return n, nil
}

// Flush escapes and writes a character left incomplete by the last write.
func (t *termWriter) Flush() error {
	var out []byte
	for _, c := range t.pending {
		out = fmt.Appendf(out, `\x%02x`, c)
	}
	t.pending = nil
	return t.emit(out)
}

func (t *termWriter) emit(out []byte) error {
	if len(out) == 0 {
		return nil
	}
	_, err := t.w.Write(out)
	return err
}

// boundedWriter fails writes beyond limit bytes, so that no answer can make
// lockstepctl print without bound, whatever a renderer makes of it.
type boundedWriter struct {
	w       io.Writer
	limit   int64
	written int64
}

// errOutputLimit is returned by a boundedWriter beyond its limit.
var errOutputLimit = errors.New("output limit reached")

func (b *boundedWriter) Write(p []byte) (int, error) {
	if b.written+int64(len(p)) > b.limit {
		return 0, fmt.Errorf("%w: over %d bytes", errOutputLimit, b.limit)
	}
	b.written += int64(len(p))
	return b.w.Write(p)
}
