package stage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/git-flume/git-flume/internal/git"
)

// RolesDir holds the roles a stage may name (A9): .flume/roles/<role>.md,
// front matter then a description.
const RolesDir = ".flume/roles"

// Role is what an agent in a stage may do (A9).
type Role struct {
	// Name is the role's file name; a role file may say it again
	// (name:), as the unfolding notes write them, and must then agree.
	Name string `yaml:"name" json:"name"`
	// Description says what the role is for (the notes' description:).
	Description string `yaml:"description" json:"description,omitempty"`
	// Model is the role's preferred model, handed to every agent program
	// that takes one (--model; {model} in a declared command).
	Model string `yaml:"model" json:"model,omitempty"`
	// Tools is the allowlist passed to programs that take one (Claude
	// Code --allowedTools); empty allows what the program allows.
	Tools []string `yaml:"tools" json:"tools"`
	// PathRestrictions are allow/deny globs over paths inside the place,
	// first match wins; no match allows.
	PathRestrictions []PathRule `yaml:"path-restrictions" json:"pathRestrictions"`
	// DelegatesTo are the kinds an agent in this role may launch places
	// of from inside its own.
	DelegatesTo []string `yaml:"delegates-to" json:"delegatesTo"`
}

// PathRule is one path restriction: exactly one of Allow and Deny, for
// the operations in Ops (read, write, edit; none is all of them). A role
// writes it as A9 does, `<read|write|edit|rw> <allow|deny>: <glob>`, or
// with no operation, `<allow|deny>: <glob>`, for every one.
type PathRule struct {
	Ops   []string `json:"ops,omitempty"`
	Allow string   `json:"allow,omitempty"`
	Deny  string   `json:"deny,omitempty"`
}

// Path operations a rule names (A9); rw is read, write and edit.
const (
	OpRead  = "read"
	OpWrite = "write"
	OpEdit  = "edit"
)

// UnmarshalYAML reads one rule: a mapping of one key, "[op] allow|deny",
// to its glob, or the same as one string.
func (r *PathRule) UnmarshalYAML(n *yaml.Node) error {
	var key, glob string
	switch {
	case n.Kind == yaml.MappingNode && len(n.Content) == 2:
		key, glob = n.Content[0].Value, n.Content[1].Value
	case n.Kind == yaml.ScalarNode:
		k, g, ok := strings.Cut(n.Value, ":")
		if !ok {
			return fmt.Errorf("line %d: rule %q: want <read|write|edit|rw> <allow|deny>: <glob>", n.Line, n.Value)
		}
		key, glob = k, strings.TrimSpace(g)
	default:
		return fmt.Errorf("line %d: a rule is one <read|write|edit|rw> <allow|deny>: <glob>", n.Line)
	}
	words := strings.Fields(key)
	if len(words) == 2 {
		switch words[0] {
		case OpRead, OpWrite, OpEdit:
			r.Ops = []string{words[0]}
		case "rw":
			r.Ops = []string{OpRead, OpWrite, OpEdit}
		default:
			return fmt.Errorf("line %d: rule %q: the operation is read, write, edit or rw", n.Line, key)
		}
		words = words[1:]
	}
	if len(words) != 1 || glob == "" {
		return fmt.Errorf("line %d: rule %q: want <read|write|edit|rw> <allow|deny>: <glob>", n.Line, key)
	}
	switch words[0] {
	case "allow":
		r.Allow = glob
	case "deny":
		r.Deny = glob
	default:
		return fmt.Errorf("line %d: rule %q: allow or deny", n.Line, key)
	}
	return nil
}

// covers reports whether the rule is about operation op.
func (r PathRule) covers(op string) bool { return len(r.Ops) == 0 || slices.Contains(r.Ops, op) }

func (r PathRule) String() string {
	verb, glob := "allow", r.Allow
	if r.Deny != "" {
		verb, glob = "deny", r.Deny
	}
	switch len(r.Ops) {
	case 0:
		return verb + ": " + glob
	case 1:
		return r.Ops[0] + " " + verb + ": " + glob
	}
	return "rw " + verb + ": " + glob
}

// ParseRole reads a role file: YAML front matter between "---" lines.
func ParseRole(name string, data []byte) (*Role, error) {
	rest, ok := bytes.CutPrefix(data, []byte("---\n"))
	if !ok {
		return nil, fmt.Errorf("role %s: no front matter (a first line ---)", name)
	}
	front, _, ok := bytes.Cut(rest, []byte("\n---"))
	if !ok {
		return nil, fmt.Errorf("role %s: front matter never closed with ---", name)
	}
	r := &Role{}
	dec := yaml.NewDecoder(bytes.NewReader(quoteGlobs(front)))
	dec.KnownFields(true)
	if err := dec.Decode(r); err != nil {
		return nil, fmt.Errorf("role %s: %w", name, err)
	}
	if r.Name != "" && r.Name != name {
		return nil, fmt.Errorf("role %s: its front matter names it %q; a role is named by its file (%s/%s.md)", name, r.Name, RolesDir, name)
	}
	r.Name = name
	r.Description = strings.TrimSpace(r.Description)
	if strings.ContainsAny(r.Model, " \t\n") || strings.HasPrefix(r.Model, "-") {
		return nil, fmt.Errorf("role %s: model %q is not a model name", name, r.Model)
	}
	for i, p := range r.PathRestrictions {
		if (p.Allow == "") == (p.Deny == "") {
			return nil, fmt.Errorf("role %s: path-restrictions[%d]: exactly one of allow and deny", name, i)
		}
	}
	return r, nil
}

// LoadRole reads a role as committed at rev.
func LoadRole(ctx context.Context, repo *git.Repo, rev, name string) (*Role, error) {
	data, err := repo.ReadFile(ctx, rev, RolesDir+"/"+name+".md")
	if errors.Is(err, git.ErrNotExist) {
		return nil, fmt.Errorf("role %q: no %s/%s.md at %.12s", name, RolesDir, name, rev)
	}
	if err != nil {
		return nil, err
	}
	return ParseRole(name, data)
}

// globRE turns a path glob into a regexp: ** crosses directories, * and ?
// do not.
func globRE(glob string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(glob); i++ {
		switch c := glob[i]; {
		case c == '*' && i+1 < len(glob) && glob[i+1] == '*':
			b.WriteString(".*")
			i++
			if i+1 < len(glob) && glob[i+1] == '/' {
				b.WriteString("/?")
				i++
			}
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

// Allows judges operation op on a path relative to the place: the first
// rule about op whose glob matches decides, and the rule is returned; no
// match allows.
func (r *Role) Allows(rel, op string) (bool, *PathRule) {
	rel = filepath.ToSlash(rel)
	for i := range r.PathRestrictions {
		p := &r.PathRestrictions[i]
		glob := p.Allow + p.Deny
		if p.covers(op) && globRE(glob).MatchString(rel) {
			return p.Deny == "", p
		}
	}
	return true, nil
}

// AllowsTool reports whether the role lets its agent use a tool.
//
// A tool entry with a * is a wildcard (idea_* allows idea_search), as the
// allowlist Claude Code is given reads it: the guard and the allowlist
// judge a tool alike.
func (r *Role) AllowsTool(tool string) bool {
	return len(r.Tools) == 0 || slices.ContainsFunc(r.Tools, func(t string) bool {
		if !strings.Contains(t, "*") {
			return t == tool
		}
		ok, err := path.Match(t, tool)
		return err == nil && ok
	})
}

// pathRuleLine is a path restriction written as the unfolding notes write
// them, `- read deny: docs/adr/** # why`, whose glob YAML would read as an
// alias when it starts with *.
var pathRuleLine = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(\s*-\s*)((?:(?:read|write|edit|rw)\s+)?(?:allow|deny)):\s*([^'"\s][^\s]*)(\s+#.*)?\s*$`)
})

// quoteGlobs quotes the glob of every path restriction written plainly, so
// a role file copied from the notes reads unchanged; a quoted
// glob is left as it is.
func quoteGlobs(front []byte) []byte {
	lines := strings.Split(string(front), "\n")
	for i, line := range lines {
		if m := pathRuleLine().FindStringSubmatch(line); m != nil {
			lines[i] = m[1] + m[2] + ": '" + strings.ReplaceAll(m[3], "'", "''") + "'"
		}
	}
	return []byte(strings.Join(lines, "\n"))
}
