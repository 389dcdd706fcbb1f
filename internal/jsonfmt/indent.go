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
	// nl is a newline and the indent of the deepest level seen so far:
	// a line's start is one append of a prefix of it.
	nl := []byte{'\n'}
	depth := 0
	newline := func() {
		for len(nl) < 1+depth*len(indent) {
			nl = append(nl, indent...)
		}
		dst = append(dst, nl[:1+depth*len(indent)]...)
	}
	for i := 0; i < len(src); i++ {
		if flush != nil && len(dst) >= flushAt {
			dst = flush(dst)
		}
		c := src[i]
		switch c {
		case '"':
			end := stringEnd(src, i+1)
			dst = append(dst, src[i:end]...)
			i = end - 1
		case '{', '[':
			dst = append(dst, c)
			if i+1 < len(src) && (src[i+1] == '}' || src[i+1] == ']') {
				dst = append(dst, src[i+1])
				i++
				continue
			}
			depth++
			newline()
		case '}', ']':
			depth--
			newline()
			dst = append(dst, c)
		case ',':
			dst = append(dst, c)
			newline()
		case ':':
			dst = append(dst, ':', ' ')
		default: // a number, true, false or null: up to what follows it
			j := i + 1
			for j < len(src) && !structural[src[j]] {
				j++
			}
			dst = append(dst, src[i:j]...)
			i = j - 1
		}
	}
	return dst
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
	var compact bytes.Buffer
	enc := json.NewEncoder(&compact)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	var werr error
	flush := func(b []byte) []byte {
		if werr == nil {
			_, werr = w.Write(b)
		}
		return b[:0]
	}
	out := indentTo(make([]byte, 0, flushAt+4096), bytes.TrimSuffix(compact.Bytes(), []byte("\n")), "  ", flush)
	flush(append(out, '\n'))
	return werr
}
