package git_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-flume/git-flume/internal/git"
)

// linkFixture is a repository with a committed tree worth checking out (a
// file, an executable, a symlink, a nested folder), the branch "made" at
// its head, and a git that logs every command it runs to calls.
type linkFixture struct {
	env        []string
	root, repo string
	calls      string
	r          *git.Runner
}

func newLinkFixture(t *testing.T, root string) *linkFixture {
	t.Helper()
	f := &linkFixture{root: root, repo: filepath.Join(root, "repo"), calls: filepath.Join(root, "calls")}
	f.env = append(testEnv(t), "GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z")
	mustGit(t, f.env, "init", "-q", "-b", "main", f.repo)
	for name, content := range map[string]string{"a.txt": "a\n", "sub/dir/b.txt": "b\n", "run.sh": "#!/bin/sh\n"} {
		path := filepath.Join(f.repo, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(filepath.Join(f.repo, "run.sh"), 0o755)
	if err := os.Symlink("a.txt", filepath.Join(f.repo, "link")); err != nil {
		t.Fatal(err)
	}
	mustGit(t, f.env, "-C", f.repo, "add", ".")
	mustGit(t, f.env, "-C", f.repo, "commit", "-q", "-m", "tree")
	mustGit(t, f.env, "-C", f.repo, "branch", "made")
	wrapper := filepath.Join(root, "git")
	real := mustGit(t, f.env, "--exec-path")
	script := "#!/bin/sh\necho \"$*\" >>" + f.calls + "\nexec " + filepath.Join(real, "git") + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	f.r = &git.Runner{Env: f.env, Path: wrapper}
	return f
}

// checkout plans and runs CheckoutWorktree of branch at places/id and
// returns the git commands it ran.
func (f *linkFixture) checkout(t *testing.T, id, branch string) ([]string, error) {
	t.Helper()
	os.Remove(f.calls)
	repo := mustOpen(t, f.r, f.repo)
	err := repo.CheckoutWorktree(context.Background(), repo.PlanWorktree(filepath.Join(f.repo, "places", id), branch))
	data, _ := os.ReadFile(f.calls)
	return strings.Split(strings.TrimSpace(string(data)), "\n"), err
}

// tree reads every file under dir, relative name to mode and content (a
// link's target), with root written as ROOT; skip names what not to read.
func tree(t *testing.T, dir, root string, skip ...string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		for _, s := range skip {
			if rel == s {
				return nil
			}
		}
		info, err := os.Lstat(path)
		if err != nil {
			return err
		}
		var content []byte
		if info.Mode()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(path)
			content = []byte(target)
			if err != nil {
				return err
			}
		} else if content, err = os.ReadFile(path); err != nil {
			return err
		}
		files[rel] = info.Mode().String() + " " + strings.ReplaceAll(string(content), root, "ROOT")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestCheckoutWorktreeWritesWhatGitWrites_L1: where nothing would make
// `git worktree add PATH BRANCH` do more, CheckoutWorktree writes the
// worktree's files itself and runs one git (the `reset --hard` git runs),
// and the result is git's, file for file: the administrative folder (no
// lock left), the worktree's .git file and checked-out files, the index's
// entries, a clean status and the listing. The one difference is the
// reflog of the new HEAD: git's placeholder's replacement adds an empty
// line before reset's, which stays alone here.
func TestCheckoutWorktreeWritesWhatGitWrites_L1(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ours, theirs := newLinkFixture(t, filepath.Join(dir, "ours")), newLinkFixture(t, filepath.Join(dir, "theirs"))
	calls, err := ours.checkout(t, "p1", "made")
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 || !strings.HasPrefix(calls[0], "reset --hard") {
		t.Errorf("git ran %q, want only reset --hard", calls)
	}
	mustGit(t, theirs.env, "-C", theirs.repo, "worktree", "add", "-q", filepath.Join(theirs.repo, "places", "p1"), "made")

	for _, sub := range []string{".git/worktrees/p1", "places/p1"} {
		got := tree(t, filepath.Join(ours.repo, sub), ours.root, "index", "logs/HEAD")
		want := tree(t, filepath.Join(theirs.repo, sub), theirs.root, "index", "logs/HEAD")
		if len(got) != len(want) || len(got) < 4 {
			t.Errorf("%s: %d files, git's %d:\n%q\n%q", sub, len(got), len(want), got, want)
		}
		for name, w := range want {
			if got[name] != w {
				t.Errorf("%s/%s: %q, git's %q", sub, name, got[name], w)
			}
		}
	}
	for _, args := range [][]string{
		{"ls-files", "--stage", "-z"},
		{"status", "--porcelain=v2", "--branch", "--untracked-files=all", "--ignored"},
		{"worktree", "list", "--porcelain"},
		{"rev-parse", "--git-dir", "--git-common-dir", "--show-toplevel", "--symbolic-full-name", "HEAD"},
	} {
		got := mustGit(t, ours.env, append([]string{"-C", filepath.Join(ours.repo, "places", "p1")}, args...)...)
		want := mustGit(t, theirs.env, append([]string{"-C", filepath.Join(theirs.repo, "places", "p1")}, args...)...)
		if strings.ReplaceAll(got, ours.root, "ROOT") != strings.ReplaceAll(want, theirs.root, "ROOT") {
			t.Errorf("git %s:\n%s\ngit's own worktree:\n%s", args[0], got, want)
		}
	}
	got, _ := os.ReadFile(filepath.Join(ours.repo, ".git/worktrees/p1/logs/HEAD"))
	want, _ := os.ReadFile(filepath.Join(theirs.repo, ".git/worktrees/p1/logs/HEAD"))
	if !strings.HasSuffix(string(want), string(got)) || strings.Count(string(got), "\n") != 1 || !strings.Contains(string(got), "reset: moving to HEAD") {
		t.Errorf("HEAD's reflog %q, git's %q", got, want)
	}
}

// TestCheckoutWorktreeLeavesToGit_L1: wherever git's `worktree add` would
// do more or otherwise, it runs, and nothing is written before: a
// post-checkout hook (which runs), per-worktree configuration, an id
// already taken (git numbers it), a path git knows as a missing worktree
// and a branch checked out elsewhere (git refuses both).
func TestCheckoutWorktreeLeavesToGit_L1(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := newLinkFixture(t, dir)
	gitAdds := func(id, branch string) error {
		t.Helper()
		mustGit(t, f.env, "-C", f.repo, "branch", branch)
		calls, err := f.checkout(t, id, branch)
		if !gitAdded(calls) {
			t.Errorf("%s: git ran %q, want worktree add", id, calls)
		}
		return err
	}

	hook := filepath.Join(f.repo, ".git", "hooks", "post-checkout")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\ntouch \"$0.ran\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := gitAdds("hooked", "hooked"); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(hook + ".ran"); err != nil {
		t.Errorf("the post-checkout hook did not run: %v", err)
	}
	os.Remove(hook)

	mustGit(t, f.env, "-C", f.repo, "config", "extensions.worktreeConfig", "true")
	if err := gitAdds("per-worktree", "per-worktree"); err != nil {
		t.Error(err)
	}
	mustGit(t, f.env, "-C", f.repo, "config", "--unset", "extensions.worktreeConfig")

	if err := os.Mkdir(filepath.Join(f.repo, ".git", "worktrees", "taken"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := gitAdds("taken", "taken"); err != nil {
		t.Error(err)
	} else if _, err := os.Stat(filepath.Join(f.repo, ".git", "worktrees", "taken1", "gitdir")); err != nil {
		t.Errorf("git's numbered id: %v", err)
	}

	gone := filepath.Join(f.repo, "places", "gone")
	mustGit(t, f.env, "-C", f.repo, "worktree", "add", "-q", "-b", "first", gone)
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}
	if err := gitAdds("gone", "second"); err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Errorf("a missing registered worktree's path: %v", err)
	}
	mustGit(t, f.env, "-C", f.repo, "checkout", "-q", "made")
	calls, err := f.checkout(t, "twice", "made")
	if err == nil || !gitAdded(calls) {
		t.Errorf("a branch checked out in the main worktree: git ran %q, err %v", calls, err)
	}
	if _, err := os.Lstat(filepath.Join(f.repo, ".git", "worktrees", "twice")); err == nil {
		t.Error("a refused checkout left an administrative folder")
	}
}

// gitAdded reports whether calls are git's `worktree add` alone, besides
// reads.
func gitAdded(calls []string) bool {
	added := false
	for _, c := range calls {
		added = added || strings.HasPrefix(c, "worktree add")
		if strings.HasPrefix(c, "reset") {
			return false
		}
	}
	return added
}
