package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"

	agent "github.com/git-flume/git-flume/agents"
	agentrun "github.com/git-flume/git-flume/agents/run"
	"github.com/git-flume/git-flume/agents/sandbox"
	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/internal/git/ondisk"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/record"
)

// What a stage's agent may write (A12): its place, and of git's
// own folders only what a commit on its branch writes. The main checkout,
// other places, every other branch and tag, flume's records and the
// hooks stay read-only to every process it starts.

// gitFilesChanged starts the reason of a stage blocked because the files
// that tie its place's worktree to the repository are not as git wrote
// them (placeGone).
const gitFilesChanged = "its place's git files were changed"

// branchWritten starts the reason of a stage blocked because its branch
// holds a value its reflog never had: written as a file, not by git.
const branchWritten = "its branch was written outside git"

// sandboxFor is the sandbox of run r in place p, or nil and why there is
// none: the configuration turned it off, or the kernel cannot hold one. A
// role that delegates, and a stage that submits to the lander, get their
// inbox too (agents/broker): those verbs run in the place's watcher,
// outside. An error is a place whose git folders are not as
// flume made them: nothing is started there.
func sandboxFor(env *stage.Env, repo *git.Repo, cfg *stage.Config, p *record.Place, r *stageRun) (*sandbox.Sandbox, string, error) {
	switch {
	case env.Engine.Sandbox == "":
		return nil, "flume runs agents without a sandbox here (FLUME_SANDBOX=off)", nil
	case cfg.NoSandbox:
		return nil, "flume.sandbox is off", nil
	}
	if why := env.Engine.NoLandlock(); why != "" {
		return nil, why, nil
	}
	home := agent.HomeOf(env.CallerEnv)
	stateDirs, stateFiles, err := r.prog.StatePaths(home)
	if err != nil {
		return nil, "", err
	}
	for _, d := range stateDirs {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, "", fmt.Errorf("sandbox of %s: %w", p.ID, err)
		}
	}
	admin, err := worktreeAdmin(repo.CommonDir, p)
	if err != nil {
		return nil, "", err
	}
	sb := &sandbox.Sandbox{}
	if err := sb.AddWorktree(repo.CommonDir, admin, p.Path, p.BranchRef()); err != nil {
		return nil, "", fmt.Errorf("place %s: %w", p.ID, err)
	}
	sb.AddCommon(env.CallerEnv)
	sb.Dirs, sb.Files = append(sb.Dirs, stateDirs...), append(sb.Files, stateFiles...)
	if f := r.agent.EventsFile(); f != "" {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			return nil, "", fmt.Errorf("sandbox of %s: %w", p.ID, err)
		}
		sb.Files = append(sb.Files, f)
	}
	if r.role != nil && len(r.role.DelegatesTo) > 0 || submits(cfg, p) {
		if r.inbox, err = makeInbox(r.agent.Inbox()); err != nil {
			return nil, "", fmt.Errorf("sandbox of %s: %w", p.ID, err)
		}
		sb.Dirs = append(sb.Dirs, r.inbox)
	}
	return sb, "", nil
}

// submits reports a stage whose agent submits its place to the lander
// (Q1): a stage that ends when the branch lands, in a repository that
// declares the lander's checks.
func submits(cfg *stage.Config, p *record.Place) bool {
	return p.Stages[p.Current].Deliverable == stage.DeliverLanded && len(cfg.Land) > 0
}

// makeInbox makes a run's inbox folder, private to its user: a folder,
// never a link to one.
func makeInbox(dir string) (string, error) {
	if dir == "" {
		return "", errors.New("the run has no prompt file to keep its inbox beside")
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	if info, err := os.Lstat(dir); err != nil || !info.IsDir() {
		return "", fmt.Errorf("%s is not a folder flume made", dir)
	}
	return dir, nil
}

// worktreeAdmin is git's folder for place p's worktree, as git made it:
// one whose files name another place, or were changed, is not given to an
// agent to write.
func worktreeAdmin(commonDir string, p *record.Place) (string, error) {
	admin := ondisk.WorktreeAdmin(commonDir, p.Path)
	if admin == "" {
		return "", fmt.Errorf("place %s: git has no folder for its worktree %s", p.ID, p.Path)
	}
	if changed := ondisk.WorktreeChanged(commonDir, admin, p.Path); changed != "" {
		return "", fmt.Errorf("place %s: %s", p.ID, changed)
	}
	return admin, nil
}

// holdRun gives run r of stage st its sandbox and records it; where the
// run's role cannot be held to (unenforced) it blocks st instead and
// returns the record's message: then nothing starts.
func holdRun(ctx context.Context, env *stage.Env, repo *git.Repo, cfg *stage.Config, p *record.Place, st *record.StageRecord, r *stageRun) (string, error) {
	sb, unsandboxed, err := sandboxFor(env, repo, cfg, p, r)
	if err != nil {
		return "", err
	}
	var missing string
	switch {
	case unsandboxed != "":
		missing = fmt.Sprintf("a sandbox (%s)", unsandboxed)
	case !sb.View:
		// A13: path rules are held by every layer or not offered.
		missing = fmt.Sprintf("its own view of the machine (%s)", sandbox.ViewUnavailable())
	}
	why := unenforced(r.role, r.prog, env.Engine.Guard, missing)
	if why == "" && sb != nil && r.role != nil && len(r.role.PathRestrictions) > 0 {
		if why, err = denyFolders(ctx, repo, p, r.role, sb); err != nil {
			return "", err
		}
	}
	if why != "" {
		st.Blocked(agentrun.BlockRole, why)
		return "blocked: " + why, nil
	}
	r.sandbox, r.agent.Sandbox, r.agent.Layers = sb, sandbox.Note(sb, unsandboxed), sb.Held()
	return "", nil
}

// denyFolders gives sb the folders of place p that role's path rules deny
// (Role.Folders), made where missing, so that its agent's view holds them
// for every tool (A12); or says why they cannot be held: a rule over no
// whole folder, a hidden folder whose files git tracks (they would read
// as deleted to the agent's git), a folder that is a link.
func denyFolders(ctx context.Context, repo *git.Repo, p *record.Place, role *stage.Role, sb *sandbox.Sandbox) (string, error) {
	refused := func(why string) string {
		return fmt.Sprintf("role %s limits paths, and %s: a shell command asks no guard, so nothing was started rather than the limits silently not enforced", role.Name, why)
	}
	hidden, readOnly, err := role.Folders()
	if err != nil {
		return refused(err.Error()), nil
	}
	for _, dir := range hidden {
		if _, err := repo.ResolveRef(ctx, p.BranchRef()+":"+dir); err == nil {
			return refused(fmt.Sprintf("git tracks files in %s, which its rules hide: hidden, they would read as deleted to its agent's git (deny writes alone there, or keep them out of git)", dir)), nil
		}
	}
	root, err := os.OpenRoot(p.Path)
	if err != nil {
		return "", fmt.Errorf("place %s: %w", p.ID, err)
	}
	defer func() { _ = root.Close() }() // only made folders and read through it
	for _, dir := range slices.Concat(hidden, readOnly) {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return refused(fmt.Sprintf("%s cannot be made a folder of its place: %v", dir, err)), nil
		}
		for part := dir; part != "."; part = path.Dir(part) {
			if info, err := root.Lstat(part); err != nil || !info.IsDir() {
				return refused(fmt.Sprintf("%s in its place is not a folder (a link?)", part)), nil
			}
		}
	}
	for _, dir := range hidden {
		sb.Hidden = append(sb.Hidden, filepath.Join(p.Path, dir))
	}
	for _, dir := range readOnly {
		sb.ReadOnly = append(sb.ReadOnly, filepath.Join(p.Path, dir))
	}
	return "", nil
}
