package git_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-flume/git-flume/internal/git"
)

// TestSnapshotFromTheWorkTreesIndexIsTheWorkTree_W3: a snapshot taken
// over a copy of the work tree's own index (issue 46: git re-reads only
// the files whose stat data moved) is the tree git makes from HEAD with
// every file added, in a linked worktree with changes of every kind (one
// of the same size written right after the index was refreshed), and the
// real index is left as it was.
func TestSnapshotFromTheWorkTreesIndexIsTheWorkTree_W3(t *testing.T) {
	ctx := context.Background()
	env := testEnv(t)
	root := t.TempDir()
	main, wt := filepath.Join(root, "main"), filepath.Join(root, "wt")
	mustGit(t, env, "init", "-q", "-b", "main", main)
	write := func(dir, name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"kept", "edited", "deleted", "racy"} {
		write(main, f, f+"\n")
	}
	write(main, ".gitignore", "*.log\n")
	mustGit(t, env, "-C", main, "add", ".")
	mustGit(t, env, "-C", main, "commit", "-q", "-m", "init")
	mustGit(t, env, "-C", main, "worktree", "add", "-q", "-b", "w", wt)

	write(wt, "edited", "edited, and longer\n")
	if err := os.Remove(filepath.Join(wt, "deleted")); err != nil {
		t.Fatal(err)
	}
	write(wt, "new", "untracked\n")
	write(wt, "build.log", "ignored\n")
	write(wt, "staged-gone", "staged\n")
	write(wt, "staged-then-edited", "first\n")
	mustGit(t, env, "-C", wt, "add", "staged-gone", "staged-then-edited")
	if err := os.Remove(filepath.Join(wt, "staged-gone")); err != nil {
		t.Fatal(err)
	}
	write(wt, "staged-then-edited", "second\n")
	// Same size, written at once after the index that holds its old
	// stat data was refreshed.
	_, _ = gitOut(t, env, "-C", wt, "update-index", "-q", "--refresh") // says what needs updating
	write(wt, "racy", "RACY\n")

	index := strings.TrimSpace(mustGit(t, env, "-C", wt, "rev-parse", "--path-format=absolute", "--git-path", "index"))
	before, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	repo := mustOpen(t, &git.Runner{Env: env}, main)
	got, err := repo.SnapshotTree(ctx, wt)
	if err != nil {
		t.Fatal(err)
	}
	want := truthTree(t, env, wt, filepath.Join(root, "truth-index"))
	if got != want {
		t.Errorf("snapshot %s, git's own tree of the work tree %s:\n%s", got, want, mustGit(t, env, "-C", main, "diff", "--stat", want, got))
	}
	for name, present := range map[string]bool{"edited": true, "new": true, "racy": true, "staged-then-edited": true, "deleted": false, "build.log": false, "staged-gone": false} {
		_, err := gitOut(t, env, "-C", main, "cat-file", "-e", got+":"+name)
		if (err == nil) != present {
			t.Errorf("%s in the snapshot: %v, want %v", name, err == nil, present)
		}
	}
	if blob := mustGit(t, env, "-C", main, "cat-file", "blob", got+":racy"); blob != "RACY" {
		t.Errorf("racy in the snapshot holds %q, want what is on disk", blob)
	}
	after, err := os.ReadFile(index)
	if err != nil || !bytes.Equal(before, after) {
		t.Errorf("the work tree's index changed (%v)", err)
	}
}

// truthTree is the tree git makes of the work tree at dir: HEAD read into
// a fresh index, every file added.
func truthTree(t *testing.T, env []string, dir, index string) string {
	t.Helper()
	env = append(env[:len(env):len(env)], "GIT_INDEX_FILE="+index)
	for _, args := range [][]string{{"read-tree", "HEAD"}, {"add", "-A", "--", "."}} {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	cmd := exec.Command("git", "write-tree")
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// TestSnapshotOfASparseWorkTreeKeepsWhatItLeavesOut_W3: a work tree can
// leave files out of its folder on purpose: a sparse checkout, or entries
// marked skip-worktree by hand (git update-index --skip-worktree; a
// place made without a checkout). Its snapshot is HEAD's tree with its
// own changes: what it leaves out is kept as HEAD has it, never taken for
// deleted. Without sparse-checkout set, `git add -A -- .` refuses a
// pathspec that matches such entries; the snapshot then fell back to a
// fresh index, and the radar saw every file left out as deleted by the
// place.
func TestSnapshotOfASparseWorkTreeKeepsWhatItLeavesOut_W3(t *testing.T) {
	ctx := context.Background()
	env := testEnv(t)
	for _, how := range []string{"sparse-checkout", "skip-worktree"} {
		root := t.TempDir()
		main, wt := filepath.Join(root, "main"), filepath.Join(root, "wt")
		mustGit(t, env, "init", "-q", "-b", "main", main)
		for _, f := range []string{"in/a", "in/b", "out/c", "out/d"} {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(main, f)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(main, f), []byte(f+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		mustGit(t, env, "-C", main, "add", ".")
		mustGit(t, env, "-C", main, "commit", "-q", "-m", "init")
		mustGit(t, env, "-C", main, "worktree", "add", "-q", "-b", "w", wt)
		want := "M\tin/a"
		if how == "sparse-checkout" {
			mustGit(t, env, "-C", wt, "sparse-checkout", "set", "in")
			if err := os.WriteFile(filepath.Join(wt, "in", "a"), []byte("edited\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		} else {
			// every file left out: the folder holds nothing of the tree
			mustGit(t, env, "-C", wt, "update-index", "--skip-worktree", "in/a", "in/b", "out/c", "out/d")
			for _, dir := range []string{"in", "out"} {
				if err := os.RemoveAll(filepath.Join(wt, dir)); err != nil {
					t.Fatal(err)
				}
			}
			want = ""
		}
		if _, err := os.Stat(filepath.Join(wt, "out", "c")); !os.IsNotExist(err) {
			t.Fatalf("%s: out/c is checked out (%v)", how, err)
		}
		repo := mustOpen(t, &git.Runner{Env: env}, main)
		got, err := repo.SnapshotTree(ctx, wt)
		if err != nil {
			t.Fatal(err)
		}
		if diff := strings.TrimSpace(mustGit(t, env, "-C", main, "diff", "--name-status", "w", got)); diff != want {
			t.Errorf("%s: the snapshot differs from HEAD by:\n%s\nwant %q", how, diff, want)
		}
	}
}
