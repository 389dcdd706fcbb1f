package ondisk_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/git-flume/git-flume/internal/git/ondisk"
)

// TestWorkStampMovesWithWhatGitAddReads_W3: a work tree's stamp moves
// with every change `git add -A` would take into a snapshot (a tracked
// file rewritten at the same size, its mode, an untracked file, one in a
// new folder and a second one there, an untracked file rewritten, a
// tracked file in an ignored folder, an ignore file, the index, a link
// pointed elsewhere) and holds over a file in a folder git never enters
// or behind a link to a folder. It vouches for nothing
// changed within its racy window, a repository nested in the work tree,
// and with a negation among the ignore rules it enters every folder.
func TestWorkStampMovesWithWhatGitAddReads_W3(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("a stamp vouches for a work tree on Linux only")
	}
	dir := t.TempDir()
	env := append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, ".config"),
		"GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@b", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@b")
	wt := filepath.Join(dir, "wt")
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", wt}, args...)...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write := func(name, body string) {
		t.Helper()
		p := filepath.Join(wt, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(wt, 0o755); err != nil {
		t.Fatal(err)
	}
	git("init", "-q")
	write("a.txt", "one\n")
	write("dir/b.txt", "two\n")
	write(".gitignore", "ignored/\n")
	write("ignored/kept.txt", "tracked though ignored\n")
	git("add", "a.txt", "dir/b.txt", ".gitignore")
	git("add", "-f", "ignored/kept.txt")
	git("commit", "-q", "-m", "init")
	common := filepath.Join(wt, ".git")
	// A link to a folder outside: git takes the link, never what is behind it.
	outside := filepath.Join(dir, "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(wt, "link")); err != nil {
		t.Fatal(err)
	}
	settled := func() string {
		t.Helper()
		time.Sleep(150 * time.Millisecond) // past the racy window
		s, ok := ondisk.WorkStamp(wt, common)
		if !ok {
			t.Fatal("a settled work tree has no stamp")
		}
		return s
	}
	last := settled()
	if again := settled(); again != last {
		t.Fatal("the stamp of an unchanged work tree moved")
	}
	for _, c := range []struct {
		change string
		do     func()
		moves  bool
	}{
		{"a tracked file rewritten at its size", func() { write("a.txt", "uno\n") }, true},
		{"its mode", func() { os.Chmod(filepath.Join(wt, "a.txt"), 0o755) }, true},
		{"an untracked file", func() { write("c.txt", "three\n") }, true},
		{"a file in a new folder", func() { write("new/x.txt", "x\n") }, true},
		{"a second file there", func() { write("new/y.txt", "y\n") }, true},
		{"an untracked file rewritten at its size", func() { write("new/x.txt", "X\n") }, true},
		{"a tracked file in an ignored folder", func() { write("ignored/kept.txt", "tracked though IGNORED\n") }, true},
		{"a file in an ignored folder", func() { write("ignored/junk.txt", "junk\n") }, false},
		{"an ignore file", func() { write(".gitignore", "ignored/\n*.log\n") }, true},
		{"the index", func() { git("add", "a.txt") }, true},
		{"a file in a folder of a tracked one", func() { write("dir/d.txt", "d\n") }, true},
		{"a file behind a link to a folder", func() { os.WriteFile(filepath.Join(outside, "o.txt"), []byte("o\n"), 0o644) }, false},
		{"the link pointed elsewhere", func() {
			os.Remove(filepath.Join(wt, "link"))
			os.Symlink(filepath.Join(dir, "elsewhere"), filepath.Join(wt, "link"))
		}, true},
	} {
		c.do()
		now := settled()
		if moved := now != last; moved != c.moves {
			t.Errorf("%s: the stamp moved %v, want %v", c.change, moved, c.moves)
		}
		last = now
	}

	write("fresh.txt", "just now\n")
	if _, ok := ondisk.WorkStamp(wt, common); ok {
		t.Error("a file changed within the racy window was vouched for")
	}
	write(".gitignore", "ignored/\n!ignored/keep-me.txt\n")
	last = settled()
	write("ignored/more.txt", "more\n")
	if settled() == last {
		t.Error("with a negation among the rules, a file in an ignored folder did not move the stamp")
	}
	git("init", "-q", "nested")
	time.Sleep(150 * time.Millisecond)
	if _, ok := ondisk.WorkStamp(wt, common); ok {
		t.Error("a repository nested in the work tree was vouched for")
	}
}
