package stage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/git-flume/git-flume/internal/git"
)

// RolesDir holds the roles a stage may name (A9): .flume/roles/<role>.md,
// front matter then a description.
const RolesDir = ".flume/roles"

// Role is what an agent in a stage may do (A9).
type Role struct {
	Name string `yaml:"-" json:"name"`
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

// PathRule is one path restriction: exactly one of Allow and Deny.
type PathRule struct {
	Allow string `yaml:"allow" json:"allow,omitempty"`
	Deny  string `yaml:"deny" json:"deny,omitempty"`
}

func (r PathRule) String() string {
	if r.Deny != "" {
		return "deny: " + r.Deny
	}
	return "allow: " + r.Allow
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
	r := &Role{Name: name}
	dec := yaml.NewDecoder(bytes.NewReader(front))
	dec.KnownFields(true)
	if err := dec.Decode(r); err != nil {
		return nil, fmt.Errorf("role %s: %w", name, err)
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

// Allows judges a path relative to the place: the first rule whose glob
// matches decides, and the rule is returned; no match allows.
func (r *Role) Allows(rel string) (bool, *PathRule) {
	rel = filepath.ToSlash(rel)
	for i := range r.PathRestrictions {
		p := &r.PathRestrictions[i]
		glob := p.Allow + p.Deny
		if globRE(glob).MatchString(rel) {
			return p.Deny == "", p
		}
	}
	return true, nil
}

// AllowsTool reports whether the role lets its agent use a tool.
func (r *Role) AllowsTool(tool string) bool {
	return len(r.Tools) == 0 || slices.Contains(r.Tools, tool)
}
