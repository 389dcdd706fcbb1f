package stage

import (
	"slices"
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

// TestRoleFileAsTheNotesWriteIt_A9: a role file copied from the unfolding
// notes (seed 004) reads unchanged: name, a folded description
// and model in the front matter, a wildcard tool, and path rules whose
// globs are plain, trailing comments and a bare ** included, first match
// winning as written.
func TestRoleFileAsTheNotesWriteIt_A9(t *testing.T) {
	file := `---
name: po
description: >
  The product owner: says what,
  never how.
model: opus
tools:
  - read
  - write
  - idea_*
delegates-to:
  - architect
  - ux-designer
path-restrictions:
  - read deny: docs/adr/**   # ADRs are technical — PO must not read them
  - read allow: docs/**      # rest of docs/ is fine
  - read deny: **            # everything else (source, build files) is off-limits
---
The product owner.
`
	r, err := ParseRole("po", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	if r.Name != "po" || r.Model != "opus" || r.Description != "The product owner: says what, never how." {
		t.Fatalf("name %q, model %q, description %q", r.Name, r.Model, r.Description)
	}
	if strings.Join(r.Tools, ",") != "read,write,idea_*" || strings.Join(r.DelegatesTo, ",") != "architect,ux-designer" {
		t.Fatalf("tools %v, delegates-to %v", r.Tools, r.DelegatesTo)
	}
	for path, want := range map[string]bool{"docs/adr/0001.md": false, "docs/intro.md": true, "main.go": false} {
		if got, _ := r.Allows(path, OpRead); got != want {
			t.Errorf("read %s: allowed %v, want %v", path, got, want)
		}
	}
	if ok, _ := r.Allows("main.go", OpWrite); !ok {
		t.Error("write main.go refused: the rules are about reading")
	}
	if _, err := ParseRole("architect", []byte(file)); err == nil || !strings.Contains(err.Error(), `names it "po"`) {
		t.Errorf("a file naming another role: %v", err)
	}
}

// TestRoleToolWildcards_A9: a wildcard tool (idea_*) allows every tool it
// names, in the guard as in the allowlist; others are refused.
func TestRoleToolWildcards_A9(t *testing.T) {
	r := &Role{Name: "po", Tools: []string{"Read", "idea_*"}}
	for tool, want := range map[string]bool{"Read": true, "idea_search": true, "idea_": true, "ideas": false, "Bash": false, "Rea": false} {
		if got := r.AllowsTool(tool); got != want {
			t.Errorf("%s: allowed %v, want %v", tool, got, want)
		}
	}
}

// TestRoleFoldersHeldForEveryTool_A12: a role's deny of a whole folder is
// held by its agent's view: hidden where reading is denied, read-only
// where writing or editing alone is; what a hidden folder holds goes
// with it. A deny the view cannot hold (a pattern, a folder an earlier
// rule allows some of, git's own folder) is an error naming the rule.
func TestRoleFoldersHeldForEveryTool_A12(t *testing.T) {
	role := func(rules ...PathRule) *Role { return &Role{Name: "r", PathRestrictions: rules} }
	hidden, readOnly, err := role(PathRule{Deny: "secrets/**"}, PathRule{Ops: []string{OpWrite}, Deny: "docs/**"},
		PathRule{Ops: []string{OpEdit}, Deny: "docs/**"}, PathRule{Ops: []string{OpRead}, Deny: "secrets/old/**"},
		PathRule{Ops: []string{OpWrite}, Deny: "secrets/new/**"}, PathRule{Allow: "**"}).Folders()
	if err != nil || !slices.Equal(hidden, []string{"secrets"}) || !slices.Equal(readOnly, []string{"docs"}) {
		t.Errorf("hidden %q, read-only %q, err %v; want [secrets] [docs] nil", hidden, readOnly, err)
	}
	for _, rules := range [][]PathRule{
		{{Deny: "**/*.pem"}},
		{{Deny: "docs/*.md"}},
		{{Deny: "../up/**"}},
		{{Deny: ".git/**"}},
		{{Allow: "docs/public/**"}, {Deny: "docs/**"}},
		{{Allow: "**"}, {Ops: []string{OpWrite}, Deny: "docs/**"}},
	} {
		if _, _, err := role(rules...).Folders(); err == nil {
			t.Errorf("%v: held, want an error naming the rule", rules)
		}
	}
	// an earlier allow of another operation does not reach the deny
	if _, ro, err := role(PathRule{Ops: []string{OpRead}, Allow: "docs/**"}, PathRule{Ops: []string{OpWrite}, Deny: "docs/**"}).Folders(); err != nil || !slices.Equal(ro, []string{"docs"}) {
		t.Errorf("read allow then write deny: %q, %v", ro, err)
	}
}
