package term

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Clean is s for one line of output: every control character (C0, DEL,
// C1, a newline and a tab too), every bidirectional override and every
// byte that is not UTF-8 is written as an escape (\n, \t, \x1b, \u202e),
// so s shows as text and stays on its line.
func Clean(s string) string {
	if printableASCII(s) {
		return s
	}
	var b strings.Builder
	write(&b, s, false)
	return b.String()
}

// CleanLines is Clean for text of many lines: newlines and tabs stay as
// they are, every other control character is escaped.
func CleanLines(s string) string {
	var b strings.Builder
	write(&b, s, true)
	return b.String()
}

// printableASCII reports s as plain printable ASCII: nothing to escape.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

// write writes s to b, escaping what a terminal would act on; lines keeps
// newlines and tabs as they are.
func write(b *strings.Builder, s string, lines bool) {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(b, `\x%02x`, s[i])
		case lines && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(b, `\x%02x`, r)
		case r >= 0x80 && r <= 0x9f, isBidi(r), r != ' ' && unicode.Is(unicode.Cf, r) && !keepFormat(r):
			fmt.Fprintf(b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
}

// isBidi reports the bidirectional embeddings, overrides and isolates that
// make text read other than it is stored.
func isBidi(r rune) bool {
	return r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}

// keepFormat reports format characters text needs to read right: the
// zero-width joiners of emoji and scripts that use them.
func keepFormat(r rune) bool { return r == 0x200c || r == 0x200d }

// Writer escapes what a terminal would act on in everything written to it,
// newlines and tabs aside: the net under every command's output, so that a
// string printed without Clean still cannot reach the terminal as control.
// A UTF-8 sequence split across writes is kept until it is whole.
type Writer struct {
	w    io.Writer
	rest []byte
}

// NewWriter wraps w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write escapes p and writes it; it reports len(p) written when the
// escaped text was. Text with nothing to escape is written as it came,
// not copied: status's JSON at 10,000 places is 13 MB.
func (t *Writer) Write(p []byte) (int, error) {
	data := p
	if len(t.rest) > 0 {
		data = append(t.rest, p...)
		t.rest = nil
	}
	// Keep an incomplete UTF-8 sequence at the end for the next write.
	if n := incomplete(data); n > 0 {
		t.rest = append([]byte(nil), data[len(data)-n:]...)
		data = data[:len(data)-n]
	}
	if safeLines(data) {
		if _, err := t.w.Write(data); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	var b strings.Builder
	write(&b, string(data), true)
	if _, err := io.WriteString(t.w, b.String()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes what an unfinished UTF-8 sequence left, escaped.
func (t *Writer) Flush() error {
	if len(t.rest) == 0 {
		return nil
	}
	var b strings.Builder
	write(&b, string(t.rest), true)
	t.rest = nil
	_, err := io.WriteString(t.w, b.String())
	return err
}

// safeLines reports text with nothing to escape but plain ASCII, newlines
// and tabs: the fast path.
func safeLines(s []byte) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\n' && c != '\t') || c >= 0x7f {
			return false
		}
	}
	return true
}

// incomplete is how many bytes at the end of b begin a UTF-8 sequence that
// is not finished yet.
func incomplete(b []byte) int {
	for n := 1; n <= 3 && n <= len(b); n++ {
		c := b[len(b)-n]
		if c < 0x80 {
			return 0
		}
		if c >= 0xc0 { // a leading byte: how long its sequence is
			want := 2
			switch {
			case c >= 0xf0:
				want = 4
			case c >= 0xe0:
				want = 3
			}
			if want > n {
				return n
			}
			return 0
		}
	}
	return 0
}
