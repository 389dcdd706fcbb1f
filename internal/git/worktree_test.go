package git_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/internal/git/ondisk"
)

// porcelain writes worktrees as `git worktree list --porcelain -z` does.
func porcelain(wts []git.Worktree) string {
	var b strings.Builder
	for _, wt := range wts {
		b.WriteString("worktree " + wt.Path + "\x00")
		if wt.Bare {
			b.WriteString("bare\x00")
		} else {
			b.WriteString("HEAD " + wt.Head + "\x00")
			if wt.Detached {
				b.WriteString("detached\x00")
			} else if wt.Branch != "" {
				b.WriteString("branch " + wt.Branch + "\x00")
			}
		}
		if wt.Locked {
			b.WriteString(strings.TrimSuffix("locked "+wt.LockReason, " ") + "\x00")
		}
		if wt.Prunable {
			b.WriteString("prunable gitdir file points to non-existent location\x00")
		}
		b.WriteString("\x00")
	}
	return b.String()
}

// TestWorktreesReadInProcessAgreeWithGit_R4: with no git to run, Worktrees
// lists what `git worktree list --porcelain` lists, byte for byte: the main
// worktree first and the rest by path (not by their folders' names), branches loose, packed and unborn,
// detached heads, locks with and without a reason, a removed folder
// prunable unless locked, a path with a space, and no entry for an
// administrative folder whose gitdir file is empty. A folder without its
// commondir (git fails) and a relative gitdir (newer git's
// worktree.useRelativePaths) are git's to read.
func TestWorktreesReadInProcessAgreeWithGit_R4(t *testing.T) {
	ctx := context.Background()
	env := testEnv(t)
	dir := filepath.Join(t.TempDir(), "repo")
	mustGit(t, env, "init", "-q", "-b", "main", dir)
	run := func(args ...string) string { return mustGit(t, env, append([]string{"-C", dir}, args...)...) }
	run("commit", "-q", "--allow-empty", "-m", "init")
	places := filepath.Join(filepath.Dir(dir), "places")
	for _, name := range []string{"b-packed", "Z-first", "a-loose", "locked", "locked-bare", "gone", "gone-locked", "unborn"} {
		run("worktree", "add", "-q", "-b", name, filepath.Join(places, name))
	}
	// git names a worktree's folder after its last element: listed by
	// folder, b-dir/aaa would come first.
	run("worktree", "add", "-q", "-b", "zzz", filepath.Join(places, "a-dir", "zzz"))
	run("worktree", "add", "-q", "-b", "aaa", filepath.Join(places, "b-dir", "aaa"))
	run("pack-refs", "--all")
	run("worktree", "add", "-q", "--detach", filepath.Join(places, "with space"))
	run("commit", "-q", "--allow-empty", "-m", "two")
	run("update-ref", "refs/heads/a-loose", "HEAD")
	run("worktree", "lock", "--reason", "  on a usb disk\n", filepath.Join(places, "locked"))
	run("worktree", "lock", filepath.Join(places, "locked-bare"))
	run("worktree", "lock", filepath.Join(places, "gone-locked"))
	for _, name := range []string{"gone", "gone-locked"} {
		if err := os.RemoveAll(filepath.Join(places, name)); err != nil {
			t.Fatal(err)
		}
	}
	mustGit(t, env, "-C", filepath.Join(places, "unborn"), "symbolic-ref", "HEAD", "refs/heads/none-yet")
	bogus := filepath.Join(dir, ".git", "worktrees", "bogus")
	os.MkdirAll(bogus, 0o755)
	os.WriteFile(filepath.Join(bogus, "gitdir"), nil, 0o644)
	os.WriteFile(filepath.Join(bogus, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)

	cmd := exec.Command("git", "-C", dir, "worktree", "list", "--porcelain", "-z")
	cmd.Env = env
	want, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	r := &git.Runner{Env: env}
	repo := mustOpen(t, r, dir)
	r.Path = noGit
	got, err := repo.Worktrees(ctx)
	if err != nil {
		t.Fatalf("Worktrees: %v (not read in process)", err)
	}
	if porcelain(got) != string(want) {
		t.Errorf("in process:\n%q\ngit:\n%q", porcelain(got), want)
	}
	if !strings.Contains(string(want), "HEAD 0000000000000000000000000000000000000000\x00branch refs/heads/none-yet") ||
		!strings.Contains(string(want), "locked on a usb disk\x00") || !strings.Contains(string(want), "prunable") {
		t.Fatalf("the fixture lacks a case:\n%q", want)
	}

	// What git fails on, or reads otherwise, is git's to answer.
	admin := filepath.Join(dir, ".git", "worktrees", "a-loose")
	if _, ok := ondisk.Worktrees(filepath.Join(dir, ".git"), unbornRefs); !ok {
		t.Fatal("the fixture itself was not read in process")
	}
	os.Rename(filepath.Join(admin, "commondir"), filepath.Join(admin, "commondir.away"))
	if _, ok := ondisk.Worktrees(filepath.Join(dir, ".git"), unbornRefs); ok {
		t.Error("a folder without its commondir (git fails) was read in process")
	}
	os.Rename(filepath.Join(admin, "commondir.away"), filepath.Join(admin, "commondir"))
	os.WriteFile(filepath.Join(admin, "gitdir"), []byte("../../../places/a-loose/.git\n"), 0o644)
	if _, ok := ondisk.Worktrees(filepath.Join(dir, ".git"), unbornRefs); ok {
		t.Error("a relative gitdir was read in process")
	}
}

// unbornRefs reads every branch as unborn: a listing it answers is judged
// by the worktree folders alone.
func unbornRefs([]string) (map[string]string, bool) { return map[string]string{}, true }

// repoWithPlace makes a repository at dir with one commit and a place's
// worktree, places/fix--one on fix/one, as flume's launch does.
func repoWithPlace(t *testing.T, env []string, dir string) (*git.Repo, string) {
	t.Helper()
	mustGit(t, env, "init", "-q", "-b", "main", dir)
	mustGit(t, env, "-C", dir, "commit", "-q", "--allow-empty", "-m", "init")
	place := filepath.Join(dir, "places", "fix--one")
	mustGit(t, env, "-C", dir, "worktree", "add", "-q", "-b", "fix/one", place)
	return mustOpen(t, &git.Runner{Env: env}, dir), place
}

// TestGitInAWorktreeFollowsNoFileItsAgentWrote_A12: a place's agent may
// write its worktree's .git file and git's folder for it. flume's git in
// the worktree is told the repository's folders outright: a .git file
// pointed at a folder of the agent's, whose configuration names an
// fsmonitor command, runs nothing and reads the real worktree; and
// WorktreeChanged says what changed. The same status by hand runs it.
func TestGitInAWorktreeFollowsNoFileItsAgentWrote_A12(t *testing.T) {
	ctx := context.Background()
	env := testEnv(t)
	root := t.TempDir()
	dir := filepath.Join(root, "repo")
	repo, place := repoWithPlace(t, env, dir)
	if why := repo.WorktreeChanged(place); why != "" {
		t.Fatalf("a worktree as git made it: WorktreeChanged = %q", why)
	}
	os.WriteFile(filepath.Join(place, "work.txt"), []byte("x"), 0o644)

	evil, pwned := filepath.Join(place, ".evil"), filepath.Join(root, "pwned")
	mustGit(t, env, "init", "-q", "--bare", evil)
	mustGit(t, env, "-C", evil, "config", "core.bare", "false")
	mustGit(t, env, "-C", evil, "config", "core.fsmonitor", "touch "+pwned)
	if err := os.WriteFile(filepath.Join(place, ".git"), []byte("gitdir: "+evil+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dirty, err := repo.Dirty(ctx, place)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Fatal("flume's git status in the worktree ran the fsmonitor command the agent's .git file led to")
	}
	// The real worktree: its new file, and the agent's folder as files
	// in it (the agent's repository would list work.txt alone).
	if got := strings.Join(dirty, " "); !strings.Contains(got, "work.txt") || !strings.Contains(got, ".evil/config") {
		t.Errorf("Dirty = %q, want the real worktree's work.txt and .evil/config", got)
	}
	if why := repo.WorktreeChanged(place); !strings.Contains(why, ".git holds \"gitdir: "+evil+"\"") {
		t.Errorf("WorktreeChanged = %q, want it to name the .git file", why)
	}
	// The probe is real: git by hand follows the .git file.
	gitOut(t, env, "-C", place, "status", "--porcelain")
	if _, err := os.Stat(pwned); err != nil {
		t.Fatalf("git by hand did not run the fsmonitor command: the test shows nothing (%v)", err)
	}
}

// TestGitInAWorktreeOfATakenNameIsItsOwn_A12: git names a second worktree
// whose folder's name is taken worktrees/<name>1; flume's git in it is
// told that folder, never the first one's.
func TestGitInAWorktreeOfATakenNameIsItsOwn_A12(t *testing.T) {
	ctx := context.Background()
	env := testEnv(t)
	root := t.TempDir()
	dir := filepath.Join(root, "repo")
	mustGit(t, env, "init", "-q", "-b", "main", dir)
	mustGit(t, env, "-C", dir, "commit", "-q", "--allow-empty", "-m", "init")
	first, second := filepath.Join(root, "k1", "a"), filepath.Join(root, "k2", "a")
	mustGit(t, env, "-C", dir, "worktree", "add", "-q", "-b", "one", first)
	mustGit(t, env, "-C", dir, "worktree", "add", "-q", "-b", "two", second)
	os.WriteFile(filepath.Join(second, "mine.txt"), []byte("x"), 0o644)
	repo := mustOpen(t, &git.Runner{Env: env}, dir)
	dirty, err := repo.Dirty(ctx, second)
	if err != nil || strings.Join(dirty, " ") != "mine.txt" {
		t.Fatalf("Dirty(second) = %q, %v; want its own mine.txt", dirty, err)
	}
	if dirty, err := repo.Dirty(ctx, first); err != nil || len(dirty) != 0 {
		t.Fatalf("Dirty(first) = %q, %v; want nothing", dirty, err)
	}
	for _, wt := range []string{first, second} {
		if why := repo.WorktreeChanged(wt); why != "" {
			t.Errorf("WorktreeChanged(%s) = %q, want none", wt, why)
		}
	}
}

// TestWorktreeReachedThroughALinkIsUnchanged_A12: a worktree made and named
// through a symbolic link (macOS's /tmp is one) is as git wrote it, though
// git's files may name its real path.
func TestWorktreeReachedThroughALinkIsUnchanged_A12(t *testing.T) {
	env := testEnv(t)
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "real"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "link", "repo")
	repo, place := repoWithPlace(t, env, dir)
	if why := repo.WorktreeChanged(place); why != "" {
		t.Fatalf("WorktreeChanged(%s) = %q, want none", place, why)
	}
}
