package jsonfmt

import (
	"bytes"
	"encoding/json"
	"io"
)

// Indent appends to dst the compact JSON value src laid out as
// json.Indent(dst, src, "", indent) lays it out: a member or element on a
// line of its own, indented once per level; "key": value; empty objects
// and arrays kept as {} and []. src must be compact and valid, as
// json.Marshal (and an Encoder) writes it: Indent does not check it.
func Indent(dst, src []byte, indent string) []byte {
	if dst == nil {
		dst = make([]byte, 0, 2*len(src))
	}
	return indentTo(dst, src, indent, nil)
}

// indentTo is Indent, handing what it laid out to flush whenever that
// passes flushAt bytes (flush nil: never), and going on with what flush
// returns.
func indentTo(dst, src []byte, indent string, flush func([]byte) []byte) []byte {
	in := &indenter{dst: dst, nl: []byte{'\n'}, indent: indent, flush: flush}
	in.feed(src)
	return in.end()
}

// indenter lays out compact JSON fed to it in pieces, each piece whole
// tokens (a string or a literal never split), as one pass over the whole
// would: its depth and an opening bracket whose next byte decides
// whether it is empty carry over from one piece to the next.
type indenter struct {
	dst, nl []byte // nl: a newline and the indent of the deepest level seen
	indent  string
	depth   int
	open    byte // an opening bracket not laid out yet: {} and [] stay whole
	flush   func([]byte) []byte
}

func (in *indenter) newline() {
	for len(in.nl) < 1+in.depth*len(in.indent) {
		in.nl = append(in.nl, in.indent...)
	}
	in.dst = append(in.dst, in.nl[:1+in.depth*len(in.indent)]...)
}

// opened lays out the bracket held open, now that c follows it: whole
// with c when c closes it, else on a line before a deeper one.
func (in *indenter) opened(c byte) bool {
	o := in.open
	in.open = 0
	if c == '}' && o == '{' || c == ']' && o == '[' {
		in.dst = append(in.dst, o, c)
		return true
	}
	in.dst = append(in.dst, o)
	in.depth++
	in.newline()
	return false
}

func (in *indenter) feed(src []byte) {
	for i := 0; i < len(src); i++ {
		if in.flush != nil && len(in.dst) >= flushAt {
			in.dst = in.flush(in.dst)
		}
		c := src[i]
		if in.open != 0 && in.opened(c) {
			continue
		}
		switch c {
		case '"':
			end := stringEnd(src, i+1)
			in.dst = append(in.dst, src[i:end]...)
			i = end - 1
		case '{', '[':
			in.open = c
		case '}', ']':
			in.depth--
			in.newline()
			in.dst = append(in.dst, c)
		case ',':
			in.dst = append(in.dst, c)
			in.newline()
		case ':':
			in.dst = append(in.dst, ':', ' ')
		default: // a number, true, false or null: up to what follows it
			j := i + 1
			for j < len(src) && !structural[src[j]] {
				j++
			}
			in.dst = append(in.dst, src[i:j]...)
			i = j - 1
		}
	}
}

// end lays out a bracket still held open (a value that is only "{" is
// not valid JSON, but is laid out as it came) and returns what is left.
func (in *indenter) end() []byte {
	if in.open != 0 {
		in.dst = append(in.dst, in.open)
		in.open = 0
	}
	return in.dst
}

// flushAt is how much laid-out JSON Write holds before writing it.
const flushAt = 64 << 10

// structural are the bytes that end a literal in compact JSON.
var structural = [256]bool{'"': true, '{': true, '}': true, '[': true, ']': true, ',': true, ':': true}

// stringEnd is the index just past the quote that closes the string whose
// first byte after its opening quote is at from.
func stringEnd(src []byte, from int) int {
	for i := from; i < len(src); {
		j := bytes.IndexAny(src[i:], `"\`)
		if j < 0 {
			return len(src)
		}
		i += j
		if src[i] == '"' {
			return i + 1
		}
		i += 2 // a backslash and the byte it escapes
	}
	return len(src)
}

// Write writes v as every --json output is written: indented by two
// spaces, <, > and & as they are, a newline at the end. It is marshalled
// compact and laid out in one pass (Indent), which at a hundred places'
// status is a third of what the encoder's own indenting costs, and
// written as it is laid out, 64 KiB at a time: at 10,000 places the
// whole laid-out copy (13 MB, held in a buffer twice the compact's size)
// was a fifth of status's peak memory.
func Write(w io.Writer, v any) error {
	s := NewStream(w)
	s.Value(v)
	return s.Close()
}

// Stream writes one JSON document as Write lays it out, from pieces: raw
// compact JSON (Raw) and values marshalled one at a time (Value), so that
// a document of 10,000 places never exists whole in memory, compact or
// laid out (issue 46). The pieces must make one valid document, split
// only between tokens.
type Stream struct {
	w   io.Writer
	in  indenter
	buf bytes.Buffer
	enc *json.Encoder
	err error
}

// NewStream starts a document written to w.
func NewStream(w io.Writer) *Stream {
	s := &Stream{w: w}
	s.in = indenter{dst: make([]byte, 0, flushAt+4096), nl: []byte{'\n'}, indent: "  ", flush: s.flush}
	s.enc = json.NewEncoder(&s.buf)
	s.enc.SetEscapeHTML(false)
	return s
}

func (s *Stream) flush(b []byte) []byte {
	if s.err == nil {
		_, s.err = s.w.Write(b)
	}
	return b[:0]
}

// Raw lays out compact JSON as it is.
func (s *Stream) Raw(compact string) {
	s.in.feed([]byte(compact))
}

// Value lays out v, marshalled as Write marshals it.
func (s *Stream) Value(v any) {
	s.buf.Reset()
	if err := s.enc.Encode(v); err != nil {
		if s.err == nil {
			s.err = err
		}
		return
	}
	s.in.feed(bytes.TrimSuffix(s.buf.Bytes(), []byte("\n")))
}

// Close ends the document with a newline and writes what is left; the
// first error met, if any.
func (s *Stream) Close() error {
	if s.err == nil {
		s.flush(append(s.in.end(), '\n'))
	}
	return s.err
}
