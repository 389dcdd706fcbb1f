package request

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

// Request is a workspace request over 1 to 8 repositories that are direct
// children of the workspace root: checked (mode "isolated", SPEC P1), one
// changeset task in owned worktrees; or direct work (mode "direct", seed
// 001), tasks run one after another in the checkouts themselves.
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
	// Paths and ContinueFrom belong to single-repository requests; a
	// workspace request names them only to be refused.
	Paths        json.RawMessage `json:"paths,omitempty"`
	ContinueFrom json.RawMessage `json:"continueFrom,omitempty"`
}

// Modes of a request.
const (
	ModeIsolated = "isolated"
	ModeDirect   = "direct"
)

// Direct reports whether the request is direct work.
func (r *Request) Direct() bool { return r != nil && r.Mode == ModeDirect }

// Writes reports whether a direct request may change its checkouts: a
// changeset task does; text tasks only read.
func (r *Request) Writes() bool {
	for _, t := range r.Tasks {
		if t.Kind == "changeset" {
			return true
		}
	}
	return false
}

// Check is a command run in one repository's worktree.
type Check struct {
	Repository string   `json:"repository"`
	Command    string   `json:"command"`
	Args       []string `json:"args"`
}

// Line is the check's command line for people: its program and arguments.
func (c Check) Line() string { return strings.Join(append([]string{c.Command}, c.Args...), " ") }

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

func Invalid(field, format string, args ...any) error {
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
				return nil, Invalid("environment", "%s is set; workspace requests refuse git overrides in the environment", name)
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var r Request
	if err := dec.Decode(&r); err != nil {
		return nil, Invalid("request", "not a request: %v", err)
	}
	if dec.More() {
		return nil, Invalid("request", "more than one JSON value")
	}
	absRoot, err := canonical(root)
	if err != nil {
		return nil, Invalid("workspace", "%v", err)
	}
	if inside, _ := insideGit(absRoot); inside {
		return nil, Invalid("workspace", "%s is inside a git repository; a workspace is a plain folder whose children are repositories", absRoot)
	}
	if r.Mode != "" && r.Mode != ModeIsolated && r.Mode != ModeDirect {
		return nil, Invalid("mode", "\"isolated\" (checked work in owned worktrees) or \"direct\" (work in the checkouts), got %q", r.Mode)
	}
	if err := refs.ValidateName("id", r.ID); err != nil {
		return nil, Invalid("id", "%v", err)
	}
	if strings.TrimSpace(r.Goal) == "" {
		return nil, Invalid("goal", "required")
	}
	if n := len(r.Repositories); n < 1 || n > MaxRepositories {
		return nil, Invalid("repositories", "select 1 to %d repositories, got %d", MaxRepositories, n)
	}
	for _, name := range sortedKeys(r.Repositories) {
		if err := checkRepository(absRoot, name, r.Repositories[name]); err != nil {
			return nil, err
		}
	}
	check := checkIsolated
	if r.Direct() {
		check = checkDirect
	}
	if err := check(absRoot, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// checkIsolated checks a checked request's one changeset task (P1, P2).
func checkIsolated(absRoot string, r *Request) error {
	if len(r.Tasks) != 1 {
		return Invalid("tasks", "exactly one changeset task, got %d", len(r.Tasks))
	}
	t := r.Tasks[0]
	switch {
	case t.Kind != "changeset":
		return Invalid("tasks[0].kind", "only \"changeset\" tasks are supported, got %q", t.Kind)
	case len(t.DependsOn) > 0:
		return Invalid("tasks[0].dependsOn", "dependencies are not supported")
	case len(t.ContextFrom) > 0:
		return Invalid("tasks[0].contextFrom", "not supported")
	case len(t.Paths) > 0:
		return Invalid("tasks[0].paths", "not supported; the worker's worktrees are the repositories selected")
	case len(t.ContinueFrom) > 0:
		return Invalid("tasks[0].continueFrom", "not supported")
	case strings.TrimSpace(t.Requirements) == "":
		return Invalid("tasks[0].requirements", "required")
	case strings.TrimSpace(t.Deliverable) == "":
		return Invalid("tasks[0].deliverable", "required")
	}
	if err := checkInputs(absRoot, r.Repositories, t.Inputs); err != nil {
		return err
	}
	if err := checkChecks("tasks[0].checks", t.Checks, r.Repositories, 0); err != nil {
		return err
	}
	if err := checkChecks("finalChecks", r.FinalChecks, r.Repositories, MaxFinalChecks); err != nil {
		return err
	}
	return nil
}

// MaxDirectTasks bounds a direct request's tasks.
const MaxDirectTasks = 8

// checkDirect checks direct work (seed 001): 1 to 8 tasks, changeset or
// text, run in order in the selected checkouts, each depending only on
// earlier ones. Direct work has no checked integration: checks, final
// checks, paths and continueFrom are refused.
func checkDirect(absRoot string, r *Request) error {
	if len(r.FinalChecks) > 0 {
		return Invalid("finalChecks", "direct work has no checked integration; use mode \"isolated\" for checked work")
	}
	if n := len(r.Tasks); n < 1 || n > MaxDirectTasks {
		return Invalid("tasks", "direct work runs 1 to %d tasks, got %d", MaxDirectTasks, n)
	}
	seen := map[string]bool{}
	inputs := map[string]string{}
	for i, t := range r.Tasks {
		f := fmt.Sprintf("tasks[%d]", i)
		if err := refs.ValidateName("task id", t.ID); err != nil {
			return Invalid(f+".id", "%v", err)
		}
		switch {
		case seen[t.ID]:
			return Invalid(f+".id", "%q names two tasks", t.ID)
		case t.Kind != "changeset" && t.Kind != "text":
			return Invalid(f+".kind", "\"changeset\" (it changes the checkouts) or \"text\" (it reads them and answers), got %q", t.Kind)
		case len(t.Paths) > 0:
			return Invalid(f+".paths", "direct selection rejects paths; the task's scope is its requirements")
		case len(t.ContinueFrom) > 0:
			return Invalid(f+".continueFrom", "direct selection rejects continueFrom")
		case len(t.Checks) > 0:
			return Invalid(f+".checks", "direct work runs no checks; use mode \"isolated\" for checked work")
		case strings.TrimSpace(t.Requirements) == "":
			return Invalid(f+".requirements", "required")
		case strings.TrimSpace(t.Deliverable) == "":
			return Invalid(f+".deliverable", "required")
		}
		for field, names := range map[string][]string{"dependsOn": t.DependsOn, "contextFrom": t.ContextFrom} {
			for _, d := range names {
				if !seen[d] {
					return Invalid(f+"."+field, "%q is not an earlier task; tasks run in the order given", d)
				}
			}
		}
		seen[t.ID] = true
		for name, path := range t.Inputs {
			if _, dup := inputs[name]; dup {
				return Invalid(f+".inputs."+name, "an earlier task names input %q too; input names are the request's", name)
			}
			inputs[name] = path
		}
	}
	return checkInputs(absRoot, r.Repositories, inputs)
}

// inputs are every task's inputs, by name.
func (r *Request) Inputs() map[string]string {
	all := map[string]string{}
	for _, t := range r.Tasks {
		for name, path := range t.Inputs {
			all[name] = path
		}
	}
	return all
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
		return Invalid(field, "%v", err)
	}
	p, err := canonical(path)
	if err != nil {
		return Invalid(field, "%v", err)
	}
	if filepath.Dir(p) != root {
		return Invalid(field, "%s is not a direct child of the workspace %s", p, root)
	}
	info, err := os.Lstat(filepath.Join(p, ".git"))
	switch {
	case err != nil:
		return Invalid(field, "%s has no .git directory", p)
	case !info.IsDir():
		return Invalid(field, "%s is a linked worktree or a submodule checkout (.git is a file); select the repository itself", p)
	}
	if _, err := os.Lstat(filepath.Join(p, ".gitmodules")); err == nil {
		return Invalid(field, "%s has submodules, which workspace requests do not support", p)
	}
	if _, err := os.Lstat(filepath.Join(p, ".git", "modules")); err == nil {
		return Invalid(field, "%s has submodules, which workspace requests do not support", p)
	}
	return nil
}

func checkInputs(root string, repos map[string]string, inputs map[string]string) error {
	if len(inputs) > MaxInputs {
		return Invalid("tasks[0].inputs", "at most %d inputs, got %d", MaxInputs, len(inputs))
	}
	for _, name := range sortedKeys(inputs) {
		field := "tasks[0].inputs." + name
		if err := refs.ValidateName("input name", name); err != nil {
			return Invalid(field, "%v", err)
		}
		path := inputs[name]
		info, err := os.Lstat(path)
		if err != nil {
			return Invalid(field, "%v", err)
		}
		if info.Mode()&os.ModeSymlink != 0 {
			return Invalid(field, "%s is a symlink; inputs are regular files", path)
		}
		if !info.Mode().IsRegular() {
			return Invalid(field, "%s is not a regular file", path)
		}
		p, err := canonical(path)
		if err != nil {
			return Invalid(field, "%v", err)
		}
		if !strings.HasPrefix(p, root+string(filepath.Separator)) {
			return Invalid(field, "%s is outside the workspace %s", p, root)
		}
		for _, repo := range repos {
			if p == repo || strings.HasPrefix(p, repo+string(filepath.Separator)) {
				return Invalid(field, "%s is inside the repository %s; inputs stay outside every repository", p, repo)
			}
		}
		if info.Size() > MaxInputSize {
			return Invalid(field, "%s is %d bytes; at most %d", p, info.Size(), MaxInputSize)
		}
	}
	return nil
}

func checkChecks(field string, checks []Check, repos map[string]string, max int) error {
	if max > 0 && len(checks) > max {
		return Invalid(field, "at most %d entries, got %d", max, len(checks))
	}
	has := map[string]bool{}
	for i, c := range checks {
		f := fmt.Sprintf("%s[%d]", field, i)
		if _, ok := repos[c.Repository]; !ok {
			return Invalid(f+".repository", "%q is not a selected repository", c.Repository)
		}
		if strings.TrimSpace(c.Command) == "" {
			return Invalid(f+".command", "required")
		}
		has[c.Repository] = true
	}
	for _, name := range sortedKeys(repos) {
		if !has[name] {
			return Invalid(field, "repository %q has no check; every selected repository needs one", name)
		}
	}
	return nil
}
