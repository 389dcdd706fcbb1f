package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/git-flume/git-flume/internal/git/gitconfig"
	"github.com/git-flume/git-flume/internal/git/ondisk"
)

// Worktree is one entry of `git worktree list --porcelain`.
type Worktree = ondisk.Worktree

// Worktrees lists the repository's worktrees, the main one first: from
// git's files where they are plain (ondisk.Worktrees), else in one git
// call.
func (repo *Repo) Worktrees(ctx context.Context) ([]Worktree, error) {
	if !repo.Bare {
		if wts, ok := repo.reads().Worktrees(); ok {
			return wts, nil
		}
	}
	out, err := repo.read(ctx, nil, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		return nil, fmt.Errorf("list worktrees: %w", err)
	}
	return ondisk.ParseWorktreeList(out), nil
}

// MainWorktree returns the path of the main worktree (the repository's own
// checkout), or an error when the repository is bare.
func (repo *Repo) MainWorktree(ctx context.Context) (Worktree, error) {
	wts, err := repo.Worktrees(ctx)
	if err != nil {
		return Worktree{}, err
	}
	if len(wts) == 0 || wts[0].Bare {
		return Worktree{}, fmt.Errorf("repository %s has no main worktree (bare)", repo.CommonDir)
	}
	return wts[0], nil
}

// MainCheckout returns the top of the repository's main work tree. From
// the main checkout itself that is where git runs (a submodule's too, whose
// git directory lives in the superproject's .git/modules and which `git
// worktree list` names by that directory instead). From a linked worktree
// of the ordinary layout it is the folder holding the common .git
// directory; otherwise git is asked, and a path inside a git directory is
// refused rather than used as a work tree.
// The answer is kept for the Repo's life: status asks it for every place.
func (repo *Repo) MainCheckout(ctx context.Context) (string, error) {
	repo.main.once.Do(func() { repo.main.path, repo.main.err = repo.mainCheckout(ctx) })
	return repo.main.path, repo.main.err
}

func (repo *Repo) mainCheckout(ctx context.Context) (string, error) {
	if repo.Bare {
		return "", fmt.Errorf("repository %s has no main worktree (bare)", repo.CommonDir)
	}
	if repo.GitDir == repo.CommonDir {
		return repo.Dir, nil
	}
	if filepath.Base(repo.CommonDir) == ".git" {
		return filepath.Dir(repo.CommonDir), nil
	}
	main, err := repo.MainWorktree(ctx)
	if err != nil {
		return "", err
	}
	if rel, err := filepath.Rel(repo.CommonDir, main.Path); err == nil && !strings.HasPrefix(rel, "..") {
		return "", fmt.Errorf("cannot tell the main checkout of %s (git names its git directory %s); run from the main checkout", repo.Dir, main.Path)
	}
	return main.Path, nil
}

// AddWorktree makes a linked worktree at path on a new branch started at
// base. It never reuses an existing branch or path: git refuses both.
func (repo *Repo) AddWorktree(ctx context.Context, path, branch, base string) error {
	_, err := repo.write(ctx, nil, nil, "worktree", "add", "--quiet", "--no-track", "-b", branch, path, base)
	if err != nil {
		return fmt.Errorf("add worktree %s on branch %s: %w", path, branch, err)
	}
	return nil
}

// CheckoutWorktree makes a linked worktree at path on branch, which
// exists and is checked out nowhere: AddWorktree without the branch, made
// beforehand (with the place's record, in one transaction). git writes the
// worktree's administrative files, as git owns its metadata.
func (repo *Repo) CheckoutWorktree(ctx context.Context, path, branch string) error {
	if _, err := repo.write(ctx, nil, nil, "worktree", "add", "--quiet", path, branch); err != nil {
		return fmt.Errorf("add worktree %s on branch %s: %w", path, branch, err)
	}
	return nil
}

// RemoveWorktree removes a linked worktree with `git worktree remove`, which
// itself refuses a dirty or locked worktree. force removes it even with
// changes or a lock (git's own "initializing" lock of an interrupted
// `worktree add` among them); it is only for worktrees no one has worked in.
func (repo *Repo) RemoveWorktree(ctx context.Context, path string, force bool) error {
	args := []string{"worktree", "remove"}
	if force {
		args = append(args, "--force", "--force")
	}
	args = append(args, path)
	if _, err := repo.write(ctx, nil, nil, args...); err != nil {
		return fmt.Errorf("remove worktree %s: %w", path, err)
	}
	return nil
}

// UnlockWorktree removes a worktree's lock.
func (repo *Repo) UnlockWorktree(ctx context.Context, path string) error {
	_, err := repo.write(ctx, nil, nil, "worktree", "unlock", path)
	return err
}

// PruneWorktrees forgets worktrees whose folders are gone.
func (repo *Repo) PruneWorktrees(ctx context.Context) error {
	_, err := repo.write(ctx, nil, nil, "worktree", "prune")
	return err
}

// Dirty returns the modified, staged and untracked (non-ignored) paths of
// the worktree at dir, as `git status --porcelain` names them.
func (repo *Repo) Dirty(ctx context.Context, dir string) ([]string, error) {
	out, err := repo.r.run(ctx, repo.inTree(dir, call{readOnly: true, args: []string{"status", "--porcelain", "-z", "--untracked-files=all", "--ignore-submodules=none"}}))
	if err != nil {
		return nil, fmt.Errorf("status of %s: %w", dir, err)
	}
	var paths []string
	fields := strings.Split(string(out), "\x00")
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if len(f) < 4 {
			continue
		}
		paths = append(paths, f[3:])
		if f[0] == 'R' || f[0] == 'C' {
			i++ // the rename's source follows
		}
	}
	return paths, nil
}

// ResolveCommit returns the commit rev names, or an error wrapping
// ErrNotExist.
func (repo *Repo) ResolveCommit(ctx context.Context, rev string) (string, error) {
	return repo.ResolveRef(ctx, rev+"^{commit}")
}

// SymbolicRef returns the ref a symbolic ref (such as HEAD) points at, or an
// error wrapping ErrNotExist when it is not symbolic.
func (repo *Repo) SymbolicRef(ctx context.Context, name string) (string, error) {
	out, err := repo.read(ctx, nil, "symbolic-ref", "--quiet", name)
	if err != nil {
		if exitCode(err) == 1 {
			return "", fmt.Errorf("symbolic ref %s: %w", name, ErrNotExist)
		}
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// IsAncestor reports whether commit a is an ancestor of (or equal to) b.
func (repo *Repo) IsAncestor(ctx context.Context, a, b string) (bool, error) {
	_, err := repo.read(ctx, nil, "merge-base", "--is-ancestor", "--end-of-options", a, b)
	switch {
	case err == nil:
		return true, nil
	case exitCode(err) == 1:
		return false, nil
	}
	return false, err
}

// CountBetween counts the commits reachable from to and not from from.
func (repo *Repo) CountBetween(ctx context.Context, from, to string) (int, error) {
	out, err := repo.read(ctx, nil, "rev-list", "--count", "--end-of-options", from+".."+to)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(out)))
}

// OwnCommits counts the commits reachable from to and not from from, leaving
// out those reachable from any of others and the merges of one of others
// (a merge whose parents include it): the commits made on a branch beside
// what was merged into it from elsewhere.
func (repo *Repo) OwnCommits(ctx context.Context, from, to string, others []string) (int, error) {
	args := []string{"rev-list", "--parents", "--end-of-options", to, "^" + from}
	for _, o := range others {
		args = append(args, "^"+o)
	}
	out, err := repo.read(ctx, nil, append(args, "--")...)
	if err != nil {
		return 0, err
	}
	merged := map[string]bool{}
	for _, o := range others {
		merged[o] = true
	}
	n := 0
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		own := true
		for _, parent := range f[1:] {
			if len(f) > 2 && merged[parent] {
				own = false
			}
		}
		if own {
			n++
		}
	}
	return n, nil
}

// Move is one commit of a record's chain: when it was made and its
// message.
type Move struct {
	At      time.Time `json:"at"`
	Message string    `json:"message"`
}

// History returns the newest n commits of ref's first-parent chain,
// newest first.
func (repo *Repo) History(ctx context.Context, ref string, n int) ([]Move, error) {
	out, err := repo.read(ctx, nil, "log", "--first-parent", "-n", strconv.Itoa(n), "--format=%cI%x00%s", "--end-of-options", ref, "--")
	if err != nil {
		return nil, err
	}
	var moves []Move
	for line := range strings.SplitSeq(strings.TrimSuffix(string(out), "\n"), "\n") {
		at, msg, ok := strings.Cut(line, "\x00")
		if !ok {
			continue
		}
		t, _ := time.Parse(time.RFC3339, at)
		moves = append(moves, Move{At: t, Message: msg})
	}
	return moves, nil
}

// Subjects returns the newest n commits reachable from to and not from
// from, newest first, each as its abbreviated id and subject.
func (repo *Repo) Subjects(ctx context.Context, from, to string, n int) ([]string, error) {
	out, err := repo.read(ctx, nil, "log", "-n", strconv.Itoa(n), "--format=%h %s", "--end-of-options", from+".."+to, "--")
	if err != nil {
		return nil, err
	}
	return lines(out), nil
}

// NotOn returns those of commits that are not ancestors of base, in one
// rev-list walk of what they hold that base does not.
func (repo *Repo) NotOn(ctx context.Context, commits []string, base string) (map[string]bool, error) {
	in := "^" + base + "\n" + strings.Join(commits, "\n") + "\n"
	out, err := repo.read(ctx, []byte(in), "rev-list", "--stdin")
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, c := range commits {
		want[c] = true
	}
	off := map[string]bool{}
	for _, c := range lines(out) {
		if want[c] {
			off[c] = true
		}
	}
	return off, nil
}

// ChangedPaths returns the paths that differ between two commits, each
// with its status letter as `git diff --name-status` gives it ("M a.txt").
func (repo *Repo) ChangedPaths(ctx context.Context, from, to string) ([]string, error) {
	out, err := repo.read(ctx, nil, "diff", "--name-status", "--no-renames", "-z", "--end-of-options", from, to, "--")
	if err != nil {
		return nil, err
	}
	var paths []string
	fields := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		paths = append(paths, fields[i]+" "+fields[i+1])
	}
	return paths, nil
}

func lines(out []byte) []string {
	s := strings.TrimSuffix(string(out), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// MergeBase returns the best common ancestor of a and b.
func (repo *Repo) MergeBase(ctx context.Context, a, b string) (string, error) {
	out, err := repo.read(ctx, nil, "merge-base", "--end-of-options", a, b)
	if err != nil {
		if exitCode(err) == 1 {
			return "", fmt.Errorf("merge base of %s and %s: %w", a, b, ErrNotExist)
		}
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// CherryCommit is one line of `git cherry`: a commit of the branch and
// whether the upstream already has an equivalent patch.
type CherryCommit struct {
	ID       string
	Upstream bool // "-": the upstream has the patch
}

// Cherry returns the commits of head not in upstream, each marked with
// whether upstream has an equivalent change (T4).
func (repo *Repo) Cherry(ctx context.Context, upstream, head string) ([]CherryCommit, error) {
	out, err := repo.read(ctx, nil, "cherry", upstream, head)
	if err != nil {
		return nil, fmt.Errorf("cherry %s %s: %w", upstream, head, err)
	}
	var cs []CherryCommit
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		sign, id, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		cs = append(cs, CherryCommit{ID: id, Upstream: sign == "-"})
	}
	return cs, nil
}

// DiffPatchID returns the stable patch id of the whole diff from a to b,
// "" when the diff is empty.
func (repo *Repo) DiffPatchID(ctx context.Context, a, b string) (string, error) {
	diff, err := repo.read(ctx, nil, "diff", "--no-color", "--no-ext-diff", "--full-index", a, b, "--")
	if err != nil {
		return "", fmt.Errorf("diff %s %s: %w", a, b, err)
	}
	ids, err := repo.patchIDs(ctx, diff)
	if err != nil || len(ids) == 0 {
		return "", err
	}
	return ids[0], nil
}

// CommitPatchIDs returns the stable patch ids of the non-merge commits in
// from..to.
func (repo *Repo) CommitPatchIDs(ctx context.Context, from, to string) ([]string, error) {
	log, err := repo.read(ctx, nil, "log", "--no-merges", "-p", "--no-color", "--no-ext-diff", "--full-index", "--format=commit %H", from+".."+to, "--")
	if err != nil {
		return nil, fmt.Errorf("log %s..%s: %w", from, to, err)
	}
	return repo.patchIDs(ctx, log)
}

func (repo *Repo) patchIDs(ctx context.Context, patches []byte) ([]string, error) {
	if len(bytes.TrimSpace(patches)) == 0 {
		return nil, nil
	}
	out, err := repo.read(ctx, patches, "patch-id", "--stable")
	if err != nil {
		return nil, fmt.Errorf("patch-id: %w", err)
	}
	var ids []string
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		if id, _, ok := strings.Cut(line, " "); ok {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// SwitchTree moves the index and files of the work tree at dir from commit
// from to commit to, as a fast-forward checkout does (`read-tree -u -m`):
// git refuses when a local change would be overwritten.
func (repo *Repo) SwitchTree(ctx context.Context, dir, from, to string) error {
	if _, err := repo.r.run(ctx, repo.inTree(dir, call{args: []string{"read-tree", "-u", "-m", from, to}})); err != nil {
		return fmt.Errorf("update the work tree at %s from %.12s to %.12s: %w", dir, from, to, err)
	}
	return nil
}

// Merge merges commit into the branch checked out in the work tree at dir,
// a fast-forward where it can be, else a merge commit with message. A
// merge git refuses or stops (a conflict, local changes it would
// overwrite) is aborted, so the work tree is left as it was, and the
// error carries git's words.
func (repo *Repo) Merge(ctx context.Context, dir, commit, message string) error {
	_, err := repo.r.run(ctx, repo.inTree(dir, call{args: []string{"merge", "--no-edit", "-m", message, commit}}))
	if err == nil {
		return nil
	}
	if _, err := repo.r.run(ctx, repo.inTree(dir, call{args: []string{"rev-parse", "-q", "--verify", "MERGE_HEAD"}})); err == nil {
		if _, aerr := repo.r.run(ctx, repo.inTree(dir, call{args: []string{"merge", "--abort"}})); aerr != nil {
			return fmt.Errorf("merge %.12s in %s: %w; and merge --abort failed, the work tree is mid-merge: %v", commit, dir, err, aerr)
		}
	}
	return fmt.Errorf("merge %.12s in %s: %w", commit, dir, err)
}

// IndexTree returns the tree the index of the work tree at dir holds.
func (repo *Repo) IndexTree(ctx context.Context, dir string) (string, error) {
	out, err := repo.r.run(ctx, repo.inTree(dir, call{args: []string{"write-tree"}}))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// ReadFile returns the content of path as committed at rev, or an error
// wrapping ErrNotExist.
func (repo *Repo) ReadFile(ctx context.Context, rev, path string) ([]byte, error) {
	out, err := repo.read(ctx, nil, "cat-file", "blob", rev+":"+path)
	if err != nil {
		if exitCode(err) == 128 {
			return nil, fmt.Errorf("%s at %s: %w", path, rev, ErrNotExist)
		}
		return nil, err
	}
	return out, nil
}

// HookFile is the file git would run as hook name here, when that is
// known: the configuration was read in process and sets no
// core.hooksPath, so it is the common git dir's hooks/name (which may not
// exist). ok is false whenever that is not known, so that a caller never
// runs git with hooks on thinking none would run.
func (repo *Repo) HookFile(name string) (path string, ok bool) {
	config, ok := repo.r.configInProcess(repo)
	if !ok {
		return "", false
	}
	for _, e := range config {
		if e.Key == "core.hookspath" {
			return "", false
		}
	}
	return filepath.Join(repo.CommonDir, "hooks", name), true
}

// HooksDir is where git looks for hooks in this checkout: core.hooksPath
// when set, else the common git dir's hooks.
func (repo *Repo) HooksDir(ctx context.Context) (string, error) {
	out, err := repo.read(ctx, nil, "rev-parse", "--path-format=absolute", "--git-path", "hooks")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// ConfigAt reads a git-config-syntax file committed at rev:path (such as
// .flume/config). A file that does not exist there reads as empty. It is
// read in process where parseConfig reads it as git would, else by git.
func (repo *Repo) ConfigAt(ctx context.Context, rev, path string) ([]gitconfig.Entry, error) {
	blob, err := repo.BlobAt(ctx, rev, path)
	switch {
	case err != nil:
		// Only a file that is not there reads as no configuration; a
		// read that failed is said, never taken for "nothing declared".
		return nil, fmt.Errorf("read %s at %s: %w", path, rev, err)
	case blob == "":
		return nil, nil
	}
	if typ, data, err := repo.reads().EncodedObject(blob, false); err == nil && typ == "blob" {
		if entries, ok := gitconfig.Parse(data); ok {
			return entries, nil
		}
	}
	out, err := repo.read(ctx, nil, "config", "--blob", blob, "--list", "-z")
	if err != nil {
		return nil, fmt.Errorf("read %s at %s: %w", path, rev, err)
	}
	return gitconfig.ParseList(out), nil
}

// ConfigFile reads a git-config-syntax file on disk; a missing file reads as
// empty. Like ConfigAt, it is read in process where it can be.
func (r *Runner) ConfigFile(ctx context.Context, path string) ([]gitconfig.Entry, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(abs)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if entries, ok := gitconfig.Parse(data); ok && err == nil {
		return entries, nil
	}
	out, err := r.run(ctx, call{dir: filepath.Dir(abs), readOnly: true, args: []string{"config", "--file", abs, "--list", "-z"}})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return gitconfig.ParseList(out), nil
}

// ConfigIn reads the git configuration (all scopes) of the repository
// containing dir, without opening it first: a command can read its settings
// while it opens the repository. A plain repository's is read in process
// (configInProcess); anything else by `git config --list`.
func (r *Runner) ConfigIn(ctx context.Context, dir string) ([]gitconfig.Entry, error) {
	if abs, err := filepath.Abs(dir); err == nil {
		if repo, ok := r.openInProcess(abs); ok {
			if entries, ok := r.configInProcess(repo); ok {
				return entries, nil
			}
		}
	}
	out, err := r.run(ctx, call{dir: dir, readOnly: true, args: []string{"config", "--includes", "--list", "-z"}})
	if err != nil {
		if exitCode(err) == 1 {
			return nil, nil
		}
		return nil, fmt.Errorf("read git config: %w", err)
	}
	return gitconfig.ParseList(out), nil
}

// inTree is call c in the work tree at dir, a linked worktree's folders named
// outright: git reads no dir/.git or commondir its agent wrote (A12).
func (repo *Repo) inTree(dir string, c call) call {
	c.dir, c.common = dir, repo.CommonDir
	if admin := repo.worktreeAdmin(dir); admin != "" {
		c.env = append(c.env[:len(c.env):len(c.env)], "GIT_DIR="+admin, "GIT_COMMON_DIR="+repo.CommonDir, "GIT_WORK_TREE="+dir)
	}
	return c
}

// worktreeAdmin is git's folder for the linked worktree at dir, "" for none.
func (repo *Repo) worktreeAdmin(dir string) string {
	if repo.Bare || dir == "" || filepath.Clean(dir) == filepath.Clean(repo.Dir) && repo.GitDir == repo.CommonDir {
		return ""
	}
	return ondisk.WorktreeAdmin(repo.CommonDir, dir)
}

// WorktreeChanged says how the files tying the linked worktree at dir to
// the repository differ from what git wrote, "" when they agree: git run
// there follows them, out of its agent's sandbox (A12).
func (repo *Repo) WorktreeChanged(dir string) string {
	if admin := repo.worktreeAdmin(dir); admin != "" {
		return ondisk.WorktreeChanged(repo.CommonDir, admin, dir)
	}
	return ""
}

// CheckedOut is the worktree the branch (a full ref name) is checked out
// in, or nil. Most often it is the main checkout; git checks a branch out
// in one worktree only, so no other needs looking at then.
func (repo *Repo) CheckedOut(ctx context.Context, branch string) (*Worktree, error) {
	if !repo.Bare {
		if b, err := repo.WorktreeBranch(repo.Dir); err == nil && b == branch {
			return &Worktree{Path: repo.Dir, Branch: b, Main: true}, nil
		}
	}
	wts, err := repo.Worktrees(ctx)
	if err != nil {
		return nil, err
	}
	for i := range wts {
		if wts[i].Branch == branch {
			return &wts[i], nil
		}
	}
	return nil, nil
}

// WorktreeBranch is ondisk.WorktreeBranch of this repository: a worktree
// not of it is an error wrapping ErrNotExist.
func (repo *Repo) WorktreeBranch(path string) (string, error) {
	branch, err := ondisk.WorktreeBranch(repo.CommonDir, path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("worktree %s: %w", path, ErrNotExist)
	}
	return branch, err
}

// GlobalConfigAll returns every value of key in the user's global git
// configuration (git config --global --get-all), none when it has none.
func (r *Runner) GlobalConfigAll(ctx context.Context, key string) ([]string, error) {
	if values, ok := gitconfig.GlobalValues(r.envLookup, key); ok {
		return values, nil // read in process: status --host starts no git for it
	}
	out, err := r.run(ctx, call{readOnly: true, args: []string{"config", "--global", "--get-all", "-z", key}})
	if exitCode(err) == 1 {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s from the global git configuration: %w", key, err)
	}
	return slices.DeleteFunc(strings.Split(string(out), "\x00"), func(v string) bool { return v == "" }), nil
}

// AddGlobalConfig adds value to key in the user's global git configuration
// (git config --global --add), under git's own lock of that file.
func (r *Runner) AddGlobalConfig(ctx context.Context, key, value string) error {
	if _, err := r.run(ctx, call{args: []string{"config", "--global", "--add", key, value}}); err != nil {
		return fmt.Errorf("add %s to the global git configuration: %w", key, err)
	}
	return nil
}

// Ignored reports which of paths (relative to dir) git ignores in the
// work tree at dir.
func (repo *Repo) Ignored(ctx context.Context, dir string, paths []string) (map[string]bool, error) {
	in := []byte(strings.Join(paths, "\x00") + "\x00")
	out, err := repo.r.run(ctx, repo.inTree(dir, call{readOnly: true, stdin: in, args: []string{"check-ignore", "-z", "--stdin", "--no-index"}}))
	if err != nil && exitCode(err) != 1 { // 1: none of them is ignored
		return nil, fmt.Errorf("check-ignore in %s: %w", dir, err)
	}
	return nulSet(out), nil
}

// Tracked reports which of paths (relative to dir) the index of the work
// tree at dir tracks.
func (repo *Repo) Tracked(ctx context.Context, dir string, paths []string) (map[string]bool, error) {
	out, err := repo.r.run(ctx, repo.inTree(dir, call{readOnly: true, args: append([]string{"ls-files", "-z", "--"}, paths...)}))
	if err != nil {
		return nil, fmt.Errorf("ls-files in %s: %w", dir, err)
	}
	return nulSet(out), nil
}

func nulSet(out []byte) map[string]bool {
	set := map[string]bool{}
	for _, f := range strings.Split(string(out), "\x00") {
		if f != "" {
			set[f] = true
		}
	}
	return set
}

// MergeConflicts returns the files a merge of commits a and b would leave
// conflicted, as `git merge-tree --write-tree` computes it in memory
// (nothing in any work tree or index is touched; the merged tree's
// objects are written); none for a clean merge.
func (repo *Repo) MergeConflicts(ctx context.Context, a, b string) ([]string, error) {
	_, files, err := repo.MergedTree(ctx, a, b)
	return files, err
}

// MergedTree is the tree a merge of commits a and b makes, as `git
// merge-tree --write-tree` computes it in memory, or the files it would
// leave conflicted (then tree is "").
func (repo *Repo) MergedTree(ctx context.Context, a, b string) (tree string, conflicts []string, err error) {
	out, err := repo.read(ctx, nil, "merge-tree", "--write-tree", "--name-only", "--no-messages", "--end-of-options", a, b)
	switch {
	case err == nil:
		return strings.TrimSpace(string(out)), nil, nil
	case exitCode(err) != 1:
		return "", nil, fmt.Errorf("merge-tree %.12s %.12s: %w", a, b, err)
	}
	files := lines(out)
	if len(files) > 0 {
		files = files[1:] // the first line is the tree
	}
	return "", files, nil
}

// AddDetachedWorktree makes a linked worktree at path with commit checked
// out and no branch: a throwaway checkout (the lander's checks).
func (repo *Repo) AddDetachedWorktree(ctx context.Context, path, commit string) error {
	if _, err := repo.write(ctx, nil, nil, "worktree", "add", "--quiet", "--detach", path, commit); err != nil {
		return fmt.Errorf("add worktree %s at %.12s: %w", path, commit, err)
	}
	return nil
}

// CheckoutCutShort reports whether the work tree at dir is what a checkout
// of base cut short leaves, and nothing else: its index lacks some of
// base's files, and every file that differs from base (untracked, or
// changed) holds base's content or a beginning of it (a write cut short).
// false means something in it is not git's.
func (repo *Repo) CheckoutCutShort(ctx context.Context, dir, base string) (bool, error) {
	missing, err := repo.r.run(ctx, repo.inTree(dir, call{readOnly: true, args: []string{"diff", "--cached", "--name-only", "-z", "--diff-filter=D", base}}))
	if err != nil || len(missing) == 0 {
		return false, err
	}
	others, err := repo.r.run(ctx, repo.inTree(dir, call{readOnly: true, args: []string{"ls-files", "-z", "--others", "--modified", "--exclude-standard"}}))
	if err != nil {
		return false, err
	}
	for _, f := range strings.Split(string(others), "\x00") {
		if f == "" {
			continue
		}
		have, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return false, nil // a folder, a link, a file gone: not a plain write of git's
		}
		want, err := repo.ReadFile(ctx, base, f)
		if err != nil || !bytes.HasPrefix(want, have) {
			return false, nil
		}
	}
	return true, nil
}
