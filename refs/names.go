package refs

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxNameLen is the longest kind or name accepted (R6).
const MaxNameLen = 64

// NameError is a kind or name refused by ValidateName. Nothing is created
// when a name is refused.
type NameError struct {
	What   string // "kind", "name", …
	Value  string
	Reason string
}

func (e *NameError) Error() string {
	return fmt.Sprintf("invalid %s %q: %s", e.What, e.Value, e.Reason)
}

// ValidateName checks a kind or name against R6: lowercase
// [a-z0-9][a-z0-9._-]*, at most 64 characters, never ending in ".lock" or
// ".", never containing "..". what names the field in the error ("kind", "name").
func ValidateName(what, s string) error {
	fail := func(reason string) error { return &NameError{What: what, Value: s, Reason: reason} }
	switch {
	case s == "":
		return fail("empty")
	case len(s) > MaxNameLen:
		return fail(fmt.Sprintf("longer than %d characters", MaxNameLen))
	case !isLowerAlnum(s[0]):
		return fail("must start with a lowercase letter or digit")
	case strings.Contains(s, ".."):
		return fail(`must not contain ".."`)
	case strings.HasSuffix(s, ".lock"):
		return fail(`must not end in ".lock"`)
	case strings.HasSuffix(s, "."):
		// git refuses a ref name ending in "." (check-ref-format), and a
		// name is the last part of its place's ref.
		return fail(`must not end in "."`)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isLowerAlnum(c) && c != '.' && c != '_' && c != '-' {
			return fail(fmt.Sprintf("character %q not allowed (use a-z, 0-9, '.', '_', '-')", rune(c)))
		}
	}
	return nil
}

func isLowerAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }

// MaxHostLen bounds a host name (DNS's own limit).
const MaxHostLen = 253

// ValidateHost checks a host name as records carry it (R5, R7): letters,
// digits, '.', '_' and '-', starting with a letter or digit, at most
// MaxHostLen. It is printed and compared wherever a record is read, so a
// host from a remote can hold nothing a terminal acts on.
func ValidateHost(s string) error {
	fail := func(reason string) error { return &NameError{What: "host", Value: s, Reason: reason} }
	switch {
	case s == "":
		return fail("empty")
	case len(s) > MaxHostLen:
		return fail(fmt.Sprintf("longer than %d characters", MaxHostLen))
	case !isAlnum(s[0]):
		return fail("must start with a letter or digit")
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '.' && c != '_' && c != '-' {
			return fail(fmt.Sprintf("character %q not allowed (use letters, digits, '.', '_', '-')", rune(c)))
		}
	}
	return nil
}

func isAlnum(c byte) bool { return isLowerAlnum(c) || 'A' <= c && c <= 'Z' }

// MaxKeyLen bounds a claim's session key.
const MaxKeyLen = 4096

// ValidateKey checks a claim's session key (R8): `sid:<id>` or
// `cwd:<dir>`, with no control character, at most MaxKeyLen bytes of UTF-8.
func ValidateKey(s string) error {
	fail := func(reason string) error { return &NameError{What: "claim key", Value: s, Reason: reason} }
	if !strings.HasPrefix(s, "sid:") && !strings.HasPrefix(s, "cwd:") || len(s) == 4 {
		return fail("want sid:<id> or cwd:<dir>")
	}
	if len(s) > MaxKeyLen || !utf8.ValidString(s) {
		return fail(fmt.Sprintf("not UTF-8 of at most %d bytes", MaxKeyLen))
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 {
			return fail(fmt.Sprintf("control character %U not allowed", r))
		}
	}
	return nil
}
