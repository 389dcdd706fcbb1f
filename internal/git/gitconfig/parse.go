package gitconfig

import (
	"bytes"
	"strings"
)

// Reading git-config files in process: `git config --list`
// was one of the five processes every launch started, and `git config
// --file` / `--blob` one more each for the user's flume config and the
// repository's .flume/config. Parse follows git's own parser
// (config.c: git_parse_source, get_base_var, get_value, parse_value)
// and gives up, leaving the file to git, on anything it does not read
// exactly as git does; git then answers, or names the bad line itself.

// configReader walks a config file's bytes as git's get_next_char does:
// "\r\n" reads as "\n", and the end of the file reads as a final "\n".
type configReader struct {
	data []byte
	pos  int
	eof  bool
}

func (r *configReader) next() byte {
	if r.pos >= len(r.data) {
		r.eof = true
		return '\n'
	}
	c := r.data[r.pos]
	r.pos++
	if c == '\r' && r.pos < len(r.data) && r.data[r.pos] == '\n' {
		r.pos++
		return '\n'
	}
	return c
}

func isConfigSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// IsAlpha reports an ASCII letter.
func IsAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// IsKeyChar reports a byte git allows in a config key's name.
func IsKeyChar(c byte) bool { return IsAlpha(c) || c >= '0' && c <= '9' || c == '-' }

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// Parse lists a config file's entries in order, each key as `git
// config --list` prints it (section and name lowercased, a subsection as
// written) and a key without "=" with an empty value, as ParseList
// reads git's. ok is false when git must read the file instead: a syntax
// error, a NUL byte, or a key outside any section.
func Parse(data []byte) (entries []Entry, ok bool) {
	if bytes.IndexByte(data, 0) >= 0 {
		return nil, false
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	r := &configReader{data: data}
	var section string
	comment := false
	for {
		c := r.next()
		switch {
		case c == '\n':
			if r.eof {
				return entries, true
			}
			comment = false
		case comment || isConfigSpace(c):
		case c == '#' || c == ';':
			comment = true
		case c == '[':
			name, ok := r.sectionName()
			if !ok || name == "" {
				return nil, false
			}
			section = name
		case !IsAlpha(c) || section == "":
			return nil, false
		default:
			e, ok := r.entry(section, c)
			if !ok {
				return nil, false
			}
			entries = append(entries, e)
		}
	}
}

// sectionName reads a section header after its "[": `[name]`, `[name
// "subsection"]` (the subsection kept as written, \x read as x) or the
// old `[name.sub]` (all lowercased).
func (r *configReader) sectionName() (string, bool) {
	var name strings.Builder
	for {
		c := r.next()
		switch {
		case r.eof:
			return "", false
		case c == ']':
			return name.String(), true
		case isConfigSpace(c):
			return r.subsection(&name, c)
		case !IsKeyChar(c) && c != '.':
			return "", false
		}
		name.WriteByte(lower(c))
	}
}

func (r *configReader) subsection(name *strings.Builder, c byte) (string, bool) {
	for isConfigSpace(c) {
		if c == '\n' {
			return "", false
		}
		c = r.next()
	}
	if c != '"' {
		return "", false
	}
	name.WriteByte('.')
	for {
		c := r.next()
		if c == '\n' {
			return "", false
		}
		if c == '"' {
			break
		}
		if c == '\\' {
			if c = r.next(); c == '\n' {
				return "", false
			}
		}
		name.WriteByte(c)
	}
	if r.next() != ']' {
		return "", false
	}
	return name.String(), true
}

// entry reads one "name [= value]" whose first letter is c.
func (r *configReader) entry(section string, c byte) (Entry, bool) {
	var key strings.Builder
	key.WriteString(section)
	key.WriteByte('.')
	key.WriteByte(lower(c))
	for {
		c = r.next()
		if r.eof || !IsKeyChar(c) {
			break
		}
		key.WriteByte(lower(c))
	}
	for c == ' ' || c == '\t' {
		c = r.next()
	}
	if c == '\n' {
		return Entry{Key: key.String()}, true
	}
	if c != '=' {
		return Entry{}, false
	}
	value, ok := r.value()
	return Entry{Key: key.String(), Value: value}, ok
}

// value reads a value as git's parse_value does: blanks outside quotes
// at its start and end dropped and each inside kept as a space, comments
// outside quotes ended by the line, \t \b \n \\ \" and a backslash at a
// line's end the only escapes.
func (r *configReader) value() (string, bool) {
	var v []byte
	quote, comment, space := false, false, 0
	for {
		c := r.next()
		switch {
		case c == '\n':
			if quote {
				return "", false
			}
			return string(v), true
		case comment:
		case isConfigSpace(c) && !quote:
			if len(v) > 0 {
				space++
			}
		case !quote && (c == ';' || c == '#'):
			comment = true
		default:
			for ; space > 0; space-- {
				v = append(v, ' ')
			}
			switch c {
			case '\\':
				switch c = r.next(); c {
				case '\n':
					if r.eof {
						return "", false
					}
					continue
				case 't':
					c = '\t'
				case 'b':
					c = '\b'
				case 'n':
					c = '\n'
				case '\\', '"':
				default:
					return "", false
				}
				v = append(v, c)
			case '"':
				quote = !quote
			default:
				v = append(v, c)
			}
		}
	}
}

// Entry is one key and value of a git-config file, in file order.
type Entry struct {
	Key   string // lowercased section and name; the subsection keeps its case
	Value string
}

// ParseList reads what `git config -z --list` prints: each entry its key,
// a newline and its value (none for a key without "="), NUL-terminated.
func ParseList(out []byte) []Entry {
	var es []Entry
	for rec := range strings.SplitSeq(string(out), "\x00") {
		if rec == "" {
			continue
		}
		k, v, _ := strings.Cut(rec, "\n")
		es = append(es, Entry{Key: k, Value: v})
	}
	return es
}
