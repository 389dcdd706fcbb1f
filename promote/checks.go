package promote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/git-flume/git-flume/internal/proc"
	"github.com/git-flume/git-flume/internal/words"
	"github.com/git-flume/git-flume/promote/inputs"
	"github.com/git-flume/git-flume/promote/request"
)

// checkPinned refuses a worktree whose package.json test script is not
// the one pinned at the base, whatever command is about to run (P4).
func checkPinned(m *member, dir string) error {
	if m.r.Pinned == nil {
		return nil
	}
	data, err := os.ReadFile(filepath.Join(dir, "package.json"))
	var now *string
	if err == nil {
		now = inputs.TestScript(data)
	}
	if now == nil || *now != *m.r.Pinned {
		have := "removed"
		if now != nil {
			have = fmt.Sprintf("%q", *now)
		}
		return &RefusedError{Member: m.t.Name, Reason: fmt.Sprintf("the package.json test script pinned at the base (%q) is %s in %s; checks are refused", *m.r.Pinned, have, dir)}
	}
	return nil
}

// maps are the FLUME_REPOSITORIES and FLUME_INPUTS values for a set of
// worktrees (P3).
func (ws *Workspace) maps(tree func(*member) *request.Tree) (repos, inputs string) {
	rm := map[string]string{}
	for _, m := range ws.members {
		if t := tree(m); t != nil {
			rm[m.t.Name] = t.Path
		}
	}
	im := map[string]string{}
	for name, in := range ws.members[0].r.Inputs {
		im[name] = in.Copy
	}
	r, _ := json.Marshal(rm)
	i, _ := json.Marshal(im)
	return string(r), string(i)
}

// runChecks runs checks, each in its repository's worktree of the set,
// with the complete set inspected before and after every one (P3): a check
// that leaves any member changed or dirty, or runs over a changed pinned
// script or input, is refused whatever its exit. It stops at the first
// check that does not pass.
func (ws *Workspace) runChecks(ctx context.Context, env *Env, kind string, checks []request.Check, tree func(*member) *request.Tree, want func(*member) *request.Identity) ([]request.Result, error) {
	logDir := filepath.Join(Dir(ws.Root, ws.ID), "logs")
	if err := os.MkdirAll(logDir, 0o700); err != nil {
		return nil, err
	}
	repos, inputs := ws.maps(tree)
	var results []request.Result
	// The inspection after one check is the next one's before: nothing
	// runs between them.
	inspected := ws.inspect(ctx, tree, want)
	for i, c := range checks {
		r := request.Result{Repository: c.Repository, Command: c.Command, Args: c.Args}
		if err := inspected; err != nil {
			var refused *RefusedError
			if !errors.As(err, &refused) {
				return results, err
			}
			r.Exit, r.Refused = -1, "before it ran: "+err.Error()
			return append(results, r), nil
		}
		m := ws.member(c.Repository)
		r.Log = filepath.Join(logDir, fmt.Sprintf("%s-%d-%s.log", kind, i+1, c.Repository))
		out, exit, err := runCheck(ctx, env, tree(m).Path, c, repos, inputs)
		if err != nil {
			return results, err
		}
		if err := os.WriteFile(r.Log, out, 0o600); err != nil {
			return results, fmt.Errorf("check log: %w", err)
		}
		r.Exit, r.Tail = exit, words.LastLines(string(out), proc.TailLines)
		env.progress("%s check %d/%d in %s: %s: exit %d", kind, i+1, len(checks), c.Repository, c.Line(), exit)
		inspected = ws.inspect(ctx, tree, want)
		if err := inspected; err != nil {
			var refused *RefusedError
			if !errors.As(err, &refused) {
				return results, err
			}
			r.Refused = "after it ran: " + err.Error()
		}
		results = append(results, r)
		env.fault(fmt.Sprintf("%s:after-check:%d", kind, i))
		if !r.OK() {
			break
		}
	}
	return results, nil
}

// runCheck runs one check command: not a shell, in the step environment
// of every repository step (X4: PATH, HOME, LANG and TERM of the caller),
// with the maps. A program not found exits 127, as in a shell.
func runCheck(ctx context.Context, env *Env, dir string, c request.Check, repos, inputs string) ([]byte, int, error) {
	var out bytes.Buffer
	code, err := proc.RunStep(ctx, proc.Cmd{Path: c.Command, Args: c.Args, Dir: dir, Stdout: &out, Stderr: &out,
		Env: proc.StepEnv(env.CallerEnv, "FLUME_REPOSITORIES="+repos, "FLUME_INPUTS="+inputs)})
	if err != nil {
		return out.Bytes(), code, fmt.Errorf("check %s in %s: %w", c.Line(), dir, err)
	}
	return out.Bytes(), code, nil
}

// writable makes every folder under dir writable again, so that the
// read-only input copies in them can be removed. A folder it cannot change
// makes the removal that follows fail, and that error is reported.
func writable(dir string) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
}
