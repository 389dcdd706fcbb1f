package refs

import (
	"fmt"
	"strings"
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
