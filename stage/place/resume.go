// Resume: back into an ended run's own session, with its history, in a
// person's terminal (seed 004's picker into each sub-session; issue 47).

package place

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	agent "github.com/git-flume/git-flume/agents"
	agentrun "github.com/git-flume/git-flume/agents/run"
	"github.com/git-flume/git-flume/agents/sandbox"
	"github.com/git-flume/git-flume/internal/proc"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/record"
)

// ResumeOptions select the run resume opens: the place's stage (its
// current one by default) and run (its last whose agent ended), and
// whether the session may write the place, as the stage's agent could.
type ResumeOptions struct {
	Place, Stage string
	Run          int
	Write        bool
}

// Resume opens run o.Run of place o.Place's stage in term, through its
// program's resume command (Claude Code --resume, Codex resume, pi
// --session), in the place's worktree, where the program finds the
// session. Read-only unless o.Write: the session runs in a sandbox that
// lets it write its program's own state and nothing of the place, held
// by the kernel (A12), not by asking the program; where no sandbox can
// be held, a read-only session is refused. Refused too: another host's
// place, a run whose agent is up (attach), a program that cannot resume,
// a worktree that is gone.
func (ps *Places) Resume(ctx context.Context, o ResumeOptions, term agent.Terminal) error {
	r, env := ps.r, ps.r.Env
	_, p, err := record.ReadPlace(ctx, r.Store, o.Place)
	if err != nil {
		return err
	}
	refuse := func(format string, a ...any) error {
		return &stage.RefusedError{Place: p.ID, Reason: fmt.Sprintf(format, a...)}
	}
	if err := stage.CheckHome(ctx, env, r.Git, p); err != nil {
		return err
	}
	a, n, err := resumedRun(p, o)
	if err != nil {
		return refuse("%v", err)
	}
	if !a.Ended {
		return refuse("run %d's agent is still up: git flume attach %s", n, p.ID)
	}
	cfg, err := r.Config(ctx, p.ConfigRev())
	if err != nil {
		return err
	}
	prog, err := agent.ResolveProgram(a.Program, cfg.Agents)
	if err != nil {
		return err
	}
	id := prog.ResumeID(a.Session, a.Transcript)
	if id == "" {
		return refuse("%s cannot resume run %d's session (it declares no resume command, or no transcript of it was found): git flume export %s shows it", prog.Name, n, p.ID)
	}
	if _, err := os.Stat(p.Path); err != nil {
		return refuse("its worktree %s is gone, and the program finds a session by the folder it ran in: git flume export %s shows it", p.Path, p.ID)
	}
	home := agent.HomeOf(term.Env)
	prog.Resume = slices.DeleteFunc(slices.Clone(prog.Resume), func(w string) bool { return w == "{prompt}" })
	argv := prog.ResumeArgv(agent.Vars{ResumeID: id, Transcript: a.Transcript, SessionID: a.Session, Place: p.Path, Home: home})
	sb, err := resumeSandbox(env.Engine.Sandbox, r.Git.CommonDir, p, prog, home, term.Env, o.Write)
	if err != nil {
		return refuse("%v", err)
	}
	if sb != nil {
		argv = append(sb.Wrap(env.Engine.Sandbox), argv...)
	}
	return proc.Run(ctx, proc.Cmd{Path: argv[0], Args: argv[1:], Dir: p.Path, Env: withoutFlume(term.Env),
		Stdin: term.In, Stdout: term.Out, Stderr: term.Err})
}

// resumedRun is the agent of the run o names, and its number: runs are
// numbered from 1, the stage's earlier agents first, its agent last.
func resumedRun(p *record.Place, o ResumeOptions) (*agentrun.Agent, int, error) {
	i := min(p.Current, len(p.Stages)-1)
	if o.Stage != "" {
		i = slices.IndexFunc(p.Stages, func(st record.StageRecord) bool { return st.Name == o.Stage })
		if i < 0 {
			return nil, 0, fmt.Errorf("it has no stage %s", o.Stage)
		}
	}
	st := &p.Stages[i]
	runs := append(slices.Clone(st.Earlier), agentrun.Agent{})
	if st.Agent != nil {
		runs[len(runs)-1] = *st.Agent
	} else {
		runs = runs[:len(runs)-1]
	}
	n := o.Run
	if n == 0 {
		n = len(runs)
		for n > 1 && !runs[n-1].Ended {
			n--
		}
	}
	if n < 1 || n > len(runs) {
		return nil, 0, fmt.Errorf("stage %s has %d runs with an agent; run %d is not one of them", st.Name, len(runs), o.Run)
	}
	return &runs[n-1], n, nil
}

// resumeSandbox is what a resumed session may write, entered by enter
// (git-flume): its program's own state, and, with write, the place as its
// stage's agent could; nil with write where no sandbox is held
// (FLUME_SANDBOX=off, or the kernel holds none: the session runs as the
// person's own shell would). Read-only with no sandbox is an error.
func resumeSandbox(enter, commonDir string, p *record.Place, prog agent.Program, home string, environ []string, write bool) (*sandbox.Sandbox, error) {
	why := sandbox.Unavailable()
	if enter == "" {
		why = "flume runs agents without a sandbox here (FLUME_SANDBOX=off)"
	}
	if why != "" {
		if write {
			return nil, nil
		}
		return nil, fmt.Errorf("a read-only session needs a sandbox the kernel holds, and %s; --write opens it with the place writable", why)
	}
	dirs, files, err := prog.StatePaths(home)
	if err != nil {
		return nil, err
	}
	var trees []sandbox.Tree
	if write {
		trees = []sandbox.Tree{{CommonDir: commonDir, Path: p.Path, Branch: p.BranchRef()}}
	}
	return sandbox.ForTrees(environ, trees, dirs, files)
}

// withoutFlume is environ less flume's own variables: the session is a
// person's look back, not an agent of the place.
func withoutFlume(environ []string) []string {
	return slices.DeleteFunc(slices.Clone(environ), func(kv string) bool { return strings.HasPrefix(kv, "FLUME_") })
}
