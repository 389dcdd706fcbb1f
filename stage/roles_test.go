package stage

import (
	"strings"
	"testing"
)

// TestRoleRulesInTheSpecsSyntax_A9: path restrictions read as A9 writes
// them, `<read|write|edit|rw> <allow|deny>: <glob>`, beside the plain
// `<allow|deny>: <glob>` for every operation; evaluated in order, the first
// rule about the operation that matches wins, no match allows.
func TestRoleRulesInTheSpecsSyntax_A9(t *testing.T) {
	role, err := ParseRole("r", []byte(`---
path-restrictions:
  - write deny: docs/**
  - edit allow: docs/CHANGELOG.md
  - edit deny: docs/**
  - rw deny: secrets/**
  - "read deny: vendor/**"
  - deny: build/**
---
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path, op string
		allow    bool
		rule     string
	}{
		{"docs/a.md", OpRead, true, ""},
		{"docs/a.md", OpWrite, false, "write deny: docs/**"},
		{"docs/CHANGELOG.md", OpEdit, true, "edit allow: docs/CHANGELOG.md"},
		{"docs/a.md", OpEdit, false, "edit deny: docs/**"},
		{"secrets/k.pem", OpRead, false, "rw deny: secrets/**"},
		{"secrets/k.pem", OpEdit, false, "rw deny: secrets/**"},
		{"vendor/x.go", OpRead, false, "read deny: vendor/**"},
		{"vendor/x.go", OpWrite, true, ""},
		{"build/out", OpWrite, false, "deny: build/**"},
		{"src/main.go", OpWrite, true, ""},
	} {
		ok, rule := role.Allows(c.path, c.op)
		got := ""
		if rule != nil {
			got = rule.String()
		}
		if ok != c.allow || got != c.rule {
			t.Errorf("%s %s: allow %v by %q; want %v by %q", c.op, c.path, ok, got, c.allow, c.rule)
		}
	}
	for _, bad := range []string{"- move deny: x", "- write maybe: x", "- write deny:", "- [a, b]", "- write deny x"} {
		_, err := ParseRole("bad", []byte("---\npath-restrictions:\n  "+bad+"\n---\n"))
		if err == nil || !strings.Contains(err.Error(), "role bad") {
			t.Errorf("%q: %v; want a refusal naming the role", bad, err)
		}
	}
}
