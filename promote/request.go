package promote

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/git-flume/git-flume/refs"
)

// Request is a workspace request (SPEC P1): one changeset task over 1 to 8
// repositories that are direct children of the workspace root.
type Request struct {
	Mode         string            `json:"mode"`
	ID           string            `json:"id"`
	Goal         string            `json:"goal"`
	Repositories map[string]string `json:"repositories"`
	Tasks        []Task            `json:"tasks"`
	FinalChecks  []Check           `json:"finalChecks"`
}

// Task is the one changeset task.
type Task struct {
	ID           string            `json:"id"`
	Kind         string            `json:"kind"`
	Role         string            `json:"role,omitempty"`
	ModelClass   string            `json:"modelClass,omitempty"`
	Requirements string            `json:"requirements"`
	Deliverable  string            `json:"deliverable"`
	DependsOn    []string          `json:"dependsOn"`
	ContextFrom  []string          `json:"contextFrom"`
	Inputs       map[string]string `json:"inputs"`
	Checks       []Check           `json:"checks"`
}

// Check is a command run in one repository's worktree.
type Check struct {
	Repository string   `json:"repository"`
	Command    string   `json:"command"`
	Args       []string `json:"args"`
}

// Limits of a request (P1, P2).
const (
	MaxRepositories = 8
	MaxFinalChecks  = 32
	MaxInputs       = 8
	MaxInputSize    = 64 << 10
)

// InvalidError is a request refused before anything was made: the field
// and the rule it breaks.
type InvalidError struct {
	Field string
	Rule  string
}

func (e *InvalidError) Error() string { return fmt.Sprintf("request: %s: %s", e.Field, e.Rule) }

func invalid(field, format string, args ...any) error {
	return &InvalidError{Field: field, Rule: fmt.Sprintf(format, args...)}
}

// gitOverrides are environment variables that would point git elsewhere.
var gitOverrides = []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE"}

// ParseRequest reads and validates a request against the workspace root
// it is run from and the caller's environment. Unknown fields are refused,
// as is every rule of P1 and P2, each with the field and the rule.
func ParseRequest(data []byte, root string, environ []string) (*Request, error) {
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		for _, o := range gitOverrides {
			if name == o {
				return nil, invalid("environment", "%s is set; workspace requests refuse git overrides in the environment", name)
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var r Request
	if err := dec.Decode(&r); err != nil {
		return nil, invalid("request", "not a request: %v", err)
	}
	if dec.More() {
		return nil, invalid("request", "more than one JSON value")
	}
	absRoot, err := canonical(root)
	if err != nil {
		return nil, invalid("workspace", "%v", err)
	}
	if inside, _ := insideGit(absRoot); inside {
		return nil, invalid("workspace", "%s is inside a git repository; a workspace is a plain folder whose children are repositories", absRoot)
	}
	if r.Mode != "" && r.Mode != "isolated" {
		return nil, invalid("mode", "only \"isolated\" is supported, got %q", r.Mode)
	}
	if err := refs.ValidateName("id", r.ID); err != nil {
		return nil, invalid("id", "%v", err)
	}
	if strings.TrimSpace(r.Goal) == "" {
		return nil, invalid("goal", "required")
	}
	if n := len(r.Repositories); n < 1 || n > MaxRepositories {
		return nil, invalid("repositories", "select 1 to %d repositories, got %d", MaxRepositories, n)
	}
	for _, name := range sortedKeys(r.Repositories) {
		if err := checkRepository(absRoot, name, r.Repositories[name]); err != nil {
			return nil, err
		}
	}
	if len(r.Tasks) != 1 {
		return nil, invalid("tasks", "exactly one changeset task, got %d", len(r.Tasks))
	}
	t := r.Tasks[0]
	switch {
	case t.Kind != "changeset":
		return nil, invalid("tasks[0].kind", "only \"changeset\" tasks are supported, got %q", t.Kind)
	case len(t.DependsOn) > 0:
		return nil, invalid("tasks[0].dependsOn", "dependencies are not supported")
	case len(t.ContextFrom) > 0:
		return nil, invalid("tasks[0].contextFrom", "not supported")
	case strings.TrimSpace(t.Requirements) == "":
		return nil, invalid("tasks[0].requirements", "required")
	case strings.TrimSpace(t.Deliverable) == "":
		return nil, invalid("tasks[0].deliverable", "required")
	}
	if err := checkInputs(absRoot, r.Repositories, t.Inputs); err != nil {
		return nil, err
	}
	if err := checkChecks("tasks[0].checks", t.Checks, r.Repositories, 0); err != nil {
		return nil, err
	}
	if err := checkChecks("finalChecks", r.FinalChecks, r.Repositories, MaxFinalChecks); err != nil {
		return nil, err
	}
	return &r, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// canonical returns an absolute path that is its own real path: no
// symlink anywhere in it, nothing to clean.
func canonical(p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("%q is not an absolute path", p)
	}
	if filepath.Clean(p) != p {
		return "", fmt.Errorf("%q is not canonical (clean it to %q)", p, filepath.Clean(p))
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", err
	}
	if real != p {
		return "", fmt.Errorf("%q is an alias of %q", p, real)
	}
	return p, nil
}

// insideGit reports whether dir is inside a git repository (a .git in it
// or any parent).
func insideGit(dir string) (bool, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return true, nil
		}
		if filepath.Dir(d) == d {
			return false, nil
		}
	}
}

func checkRepository(root, name, path string) error {
	field := "repositories." + name
	if err := refs.ValidateName("repository name", name); err != nil {
		return invalid(field, "%v", err)
	}
	p, err := canonical(path)
	if err != nil {
		return invalid(field, "%v", err)
	}
	if filepath.Dir(p) != root {
		return invalid(field, "%s is not a direct child of the workspace %s", p, root)
	}
	info, err := os.Lstat(filepath.Join(p, ".git"))
	switch {
	case err != nil:
		return invalid(field, "%s has no .git directory", p)
	case !info.IsDir():
		return invalid(field, "%s is a linked worktree or a submodule checkout (.git is a file); select the repository itself", p)
	}
	if _, err := os.Lstat(filepath.Join(p, ".gitmodules")); err == nil {
		return invalid(field, "%s has submodules, which workspace requests do not support", p)
	}
	if _, err := os.Lstat(filepath.Join(p, ".git", "modules")); err == nil {
		return invalid(field, "%s has submodules, which workspace requests do not support", p)
	}
	return nil
}

func checkInputs(root string, repos map[string]string, inputs map[string]string) error {
	if len(inputs) > MaxInputs {
		return invalid("tasks[0].inputs", "at most %d inputs, got %d", MaxInputs, len(inputs))
	}
	for _, name := range sortedKeys(inputs) {
		field := "tasks[0].inputs." + name
		if err := refs.ValidateName("input name", name); err != nil {
			return invalid(field, "%v", err)
		}
		path := inputs[name]
		info, err := os.Lstat(path)
		if err != nil {
			return invalid(field, "%v", err)
		}
		if info.Mode()&os.ModeSymlink != 0 {
			return invalid(field, "%s is a symlink; inputs are regular files", path)
		}
		if !info.Mode().IsRegular() {
			return invalid(field, "%s is not a regular file", path)
		}
		p, err := canonical(path)
		if err != nil {
			return invalid(field, "%v", err)
		}
		if !strings.HasPrefix(p, root+string(filepath.Separator)) {
			return invalid(field, "%s is outside the workspace %s", p, root)
		}
		for _, repo := range repos {
			if p == repo || strings.HasPrefix(p, repo+string(filepath.Separator)) {
				return invalid(field, "%s is inside the repository %s; inputs stay outside every repository", p, repo)
			}
		}
		if info.Size() > MaxInputSize {
			return invalid(field, "%s is %d bytes; at most %d", p, info.Size(), MaxInputSize)
		}
	}
	return nil
}

func checkChecks(field string, checks []Check, repos map[string]string, max int) error {
	if max > 0 && len(checks) > max {
		return invalid(field, "at most %d entries, got %d", max, len(checks))
	}
	has := map[string]bool{}
	for i, c := range checks {
		f := fmt.Sprintf("%s[%d]", field, i)
		if _, ok := repos[c.Repository]; !ok {
			return invalid(f+".repository", "%q is not a selected repository", c.Repository)
		}
		if strings.TrimSpace(c.Command) == "" {
			return invalid(f+".command", "required")
		}
		has[c.Repository] = true
	}
	for _, name := range sortedKeys(repos) {
		if !has[name] {
			return invalid(field, "repository %q has no check; every selected repository needs one", name)
		}
	}
	return nil
}
