package doctor

import (
	"cmp"
	"context"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"

	agent "github.com/git-flume/git-flume/agents"
	"github.com/git-flume/git-flume/agents/sandbox"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/place"
	"github.com/git-flume/git-flume/stage/record"
	"github.com/git-flume/git-flume/stage/runenv"
)

// Doctor is the `doctor --json` document, schema 1.
type Doctor struct {
	Schema int    `json:"schema"`
	Git    string `json:"git"`
	// Repo is the repository checked ("" outside one); Hooks whether
	// flume's post-commit and post-merge hooks are installed there.
	Repo  string `json:"repo"`
	Hooks bool   `json:"hooks"`
	// CopyOnWrite says whether the repository's file system clones files
	// copy-on-write ([run] deps are cloned so, else copied in full), and
	// CopyOnWriteProblem why not; both empty outside one.
	CopyOnWrite        bool   `json:"copyOnWrite"`
	CopyOnWriteProblem string `json:"copyOnWriteProblem,omitempty"`
	// PaneHost is the one launches use (FLUME_PANE, else tmux), and
	// PaneHostProblem why it cannot open panes ("" when it can).
	PaneHost        string `json:"paneHost"`
	PaneHostProblem string `json:"paneHostProblem"`
	// Landlock is the kernel's Landlock version (0: none), and
	// SandboxProblem why agents run without a sandbox here ("" when they
	// run in one: A12).
	Landlock       int    `json:"landlock"`
	SandboxProblem string `json:"sandboxProblem"`
	// Layers are the boundary's layers (A13), each held here or not and
	// why.
	Layers []sandbox.Layer `json:"layers"`
	// Default is the agent program a launch uses with no --agent.
	Default string            `json:"default"`
	Agents  []agent.Readiness `json:"agents"`
}

// OK reports whether a launch with the default agent can start here.
func (d *Doctor) OK() bool {
	if d.PaneHostProblem != "" {
		return false
	}
	for _, a := range d.Agents {
		if a.Name == d.Default {
			return a.CanStart
		}
	}
	return false
}

// Diagnose finds what a stage needs here (read only): git, the pane host
// launches use, the repository's hooks, and each agent program flume knows
// or the repository and the user declare, for an agent working in the
// repository's places.
func Diagnose(ctx context.Context, env *stage.Env, repoDir string) (*Doctor, error) {
	d := &Doctor{Schema: 1, Agents: []agent.Readiness{}}
	d.Git, _ = env.Runner.Version(ctx)
	d.PaneHost = cmp.Or(env.Engine.Pane, "tmux")
	if env.Engine.Panes != nil && d.PaneHost != "print" && d.PaneHost != "none" {
		if err := env.Engine.Panes.Check(ctx, env.CallerEnv); err != nil {
			d.PaneHostProblem = err.Error()
		}
	}
	d.Landlock, d.SandboxProblem, d.Layers = sandbox.LandlockABI(), env.Engine.NoLandlock(), sandbox.Layers()
	if env.Engine.Sandbox == "" {
		d.SandboxProblem = "FLUME_SANDBOX=off"
	}
	declared := map[string]agent.Program{}
	places := ""
	if repo, _, err := env.Open(ctx, repoDir); err == nil && !repo.Bare {
		if main, err := repo.MainCheckout(ctx); err == nil {
			d.Repo, places = main, filepath.Join(main, record.PlacesDir)
		}
		// A probe's scratch files, removed at once, in the folder [run]
		// deps templates live in.
		d.CopyOnWrite, d.CopyOnWriteProblem = runenv.CloneProbe(filepath.Join(repo.CommonDir, "flume", "tmp"))
		if dir, err := repo.HooksDir(ctx); err == nil {
			d.Hooks = true
			for _, h := range place.Hooks {
				d.Hooks = d.Hooks && place.HookInstalled(dir, h.Name)
			}
		}
		if cfg, err := stage.LoadConfig(ctx, env.Runner, repo, "HEAD", env.UserConfig); err == nil {
			declared = cfg.Agents
		}
	} else if cfg, err := stage.LoadFiles(ctx, env.Runner, env.UserConfig); err == nil {
		declared = cfg.Agents
	}
	if places == "" {
		places, _ = os.Getwd()
	}
	d.Default = env.AgentName("")
	names := []string{"claude", "codex", "pi"}
	for name := range declared {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	sort.Strings(names[3:])
	// Each program is asked its version at once, side by side: a node
	// program takes seconds to start.
	d.Agents = make([]agent.Readiness, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		prog, err := agent.ResolveProgram(name, declared)
		if err != nil {
			d.Agents[i] = agent.Readiness{Name: name, Checks: []agent.Check{{Name: "declaration", Status: agent.CheckMissing, Detail: err.Error()}}}
			continue
		}
		wg.Go(func() { d.Agents[i] = agent.Ready(ctx, prog, agent.CallerEnv(env.CallerEnv), places) })
	}
	wg.Wait()
	return d, nil
}
