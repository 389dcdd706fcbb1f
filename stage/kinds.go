package stage

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/git-flume/git-flume/refs"
)

// Deliverables a stage may name (K5).
const (
	DeliverCommit = "commit" // a commit on the place's branch since the stage began
	DeliverTasks  = "tasks"  // every task in the change's tasks.md ticked
	DeliverLanded = "landed" // the branch has landed on its target
	DeliverChange = "change" // a committed OpenSpec change: openspec/changes/<name>/ with proposal.md and tasks.md (K3)
	DeliverFile   = "file:"  // file:<path> exists in the place
)

func checkDeliverable(d string) error {
	switch {
	case d == DeliverCommit, d == DeliverTasks, d == DeliverLanded, d == DeliverChange:
		return nil
	case strings.HasPrefix(d, DeliverFile) && len(d) > len(DeliverFile):
		if !filepath.IsLocal(strings.TrimPrefix(d, DeliverFile)) {
			return fmt.Errorf("deliverable %q names a file outside the place", d)
		}
		return nil
	}
	return fmt.Errorf("unknown deliverable %q (want commit, tasks, change, file:<path> or landed)", d)
}

// Stage is one step of a kind: what its agent starts from and what ends it.
type Stage struct {
	Name        string
	Prompt      string // an embedded prompt name or a repository file
	Deliverable string
}

// Kind is a named list of stages.
type Kind struct {
	Name     string
	Stages   []Stage
	Declared bool // declared in .flume/config rather than shipped
}

// shippedKinds are fix, change and question (K2–K4). A stage's name is
// also the name of its shipped prompt.
var shippedKinds = map[string][]Stage{
	"fix": {
		{Name: "code", Prompt: "code", Deliverable: DeliverCommit},
		{Name: "submit", Prompt: "submit", Deliverable: DeliverLanded},
	},
	"change": {
		{Name: "construct", Prompt: "construct", Deliverable: DeliverChange},
		{Name: "code", Prompt: "code", Deliverable: DeliverTasks},
		{Name: "verify", Prompt: "verify", Deliverable: "file:openspec/changes/{name}/verify.md"},
		{Name: "submit", Prompt: "submit", Deliverable: DeliverLanded},
	},
	"question": {
		{Name: "round", Prompt: "round", Deliverable: "file:conclusion.md"},
	},
}

// shippedStage is a shipped stage by name, for declared kinds that list
// one: the first kind's definition of it.
func shippedStage(name string) (Stage, bool) {
	for _, kind := range []string{"fix", "change", "question"} {
		for _, st := range shippedKinds[kind] {
			if st.Name == name {
				return st, true
			}
		}
	}
	return Stage{}, false
}

// ResolveKind finds a kind by name among the declared and shipped kinds; a
// declared kind of the same name as a shipped one replaces it.
func ResolveKind(cfg *Config, name string) (Kind, error) {
	if err := refs.ValidateName("kind", name); err != nil {
		return Kind{}, err
	}
	names, declared := cfg.Kinds[name]
	if !declared {
		stages, ok := shippedKinds[name]
		if !ok {
			return Kind{}, &UnknownKindError{Kind: name, Known: knownKinds(cfg)}
		}
		return Kind{Name: name, Stages: stages}, nil
	}
	k := Kind{Name: name, Declared: declared}
	for _, sn := range names {
		st, ok := shippedStage(sn)
		// A declaration that only names a role or a budget leaves a
		// shipped stage as it is.
		if d, isDecl := cfg.Stages[sn]; isDecl && (d.Deliverable != "" || d.Prompt != "" || !ok) {
			if d.Deliverable == "" {
				return Kind{}, fmt.Errorf("kind %q: stage %q declares no deliverable (stage.%s.deliverable in %s)", name, sn, sn, ConfigPath)
			}
			prompt := d.Prompt
			if prompt == "" && ok {
				prompt = st.Prompt // a shipped stage keeps its own prompt
			}
			if prompt == "" {
				// refused before anything is made, not after.
				return Kind{}, fmt.Errorf("kind %q: stage %q declares no prompt (stage.%s.prompt in %s: a file in the repository)", name, sn, sn, ConfigPath)
			}
			st = Stage{Name: sn, Prompt: prompt, Deliverable: d.Deliverable}
			ok = true
		}
		if !ok {
			return Kind{}, fmt.Errorf("kind %q: stage %q is neither shipped nor declared in %s", name, sn, ConfigPath)
		}
		k.Stages = append(k.Stages, st)
	}
	if len(k.Stages) == 0 {
		return Kind{}, fmt.Errorf("kind %q has no stages", name)
	}
	return k, nil
}

// UnknownKindError is a kind that is neither shipped nor declared.
type UnknownKindError struct {
	Kind  string
	Known []string
}

func (e *UnknownKindError) Error() string {
	return fmt.Sprintf("unknown kind %q (known: %s)", e.Kind, strings.Join(e.Known, ", "))
}

func knownKinds(cfg *Config) []string {
	set := map[string]bool{}
	for k := range shippedKinds {
		set[k] = true
	}
	for k := range cfg.Kinds {
		set[k] = true
	}
	var out []string
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
