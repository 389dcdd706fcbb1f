package ondisk

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPackedRefsFoundAsGitFindsThem_R4: refs looked up one by one in a
// packed-refs file git wrote (sorted: found by binary search, tags' "^"
// lines among them) are what `git for-each-ref` lists, and a name
// packed-refs lacks (before the first, between two, after the last, a
// prefix of one) is not found; a file whose header does not say sorted
// is read whole, with the same answers.
func TestPackedRefsFoundAsGitFindsThem_R4(t *testing.T) {
	dir, env, run := gitTestRepo(t)
	run("commit", "-q", "--allow-empty", "-m", "one")
	var stdin strings.Builder
	head := strings.TrimSpace(run("rev-parse", "HEAD"))
	for i := range 300 {
		fmt.Fprintf(&stdin, "create refs/flume/places/fix--p%d %s\n", i, head)
		if i%7 == 0 {
			fmt.Fprintf(&stdin, "create refs/heads/fix/p%d %s\n", i, head)
		}
	}
	cmd := exec.Command("git", "update-ref", "--stdin")
	cmd.Env, cmd.Stdin = env, strings.NewReader(stdin.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("update-ref: %v\n%s", err, out)
	}
	for i := range 120 { // their "^" lines a third of the file
		run("tag", "-a", "-m", "t", fmt.Sprintf("v%d", i))
	}
	run("pack-refs", "--all", "--prune")
	want := map[string]string{}
	for line := range strings.Lines(run("for-each-ref", "--format=%(objectname) %(refname)")) {
		id, name, _ := strings.Cut(strings.TrimSpace(line), " ")
		want[name] = id
	}
	names := map[string]bool{"refs/a": true, "refs/flume/places/fix--p1x": true, "refs/flume/places/fix--p": true, "refs/zzz": true, "refs/tags/v1/": true}
	for name := range want {
		names[name] = true
	}
	common := filepath.Join(dir, ".git")
	data, _ := os.ReadFile(filepath.Join(common, "packed-refs"))
	for _, c := range []struct {
		name   string
		header string
	}{{"sorted", ""}, {"unsorted", "# pack-refs with: peeled fully-peeled \n"}} {
		t.Run(c.name, func(t *testing.T) {
			if c.header != "" {
				_, body, _ := strings.Cut(string(data), "\n")
				os.WriteFile(filepath.Join(common, "packed-refs"), []byte(c.header+body), 0o644)
			}
			var cache PackedRefsCache
			for name := range names {
				got := map[string]string{}
				if !cache.Lookup(common, map[string]bool{name: true}, got) {
					t.Fatalf("%s: lookup gave up", name)
				}
				if got[name] != want[name] {
					t.Fatalf("%s: found %q, git lists %q", name, got[name], want[name])
				}
			}
			if (cache.sorted != nil) != (c.header == "") {
				t.Fatalf("searched the file: %v, want %v", cache.sorted != nil, c.header == "")
			}
		})
	}
}

// gitTestRepo is a new repository in a folder of its own, with an
// environment of its own, and a way to run git there that fails the test.
func gitTestRepo(t *testing.T) (dir string, env []string, run func(args ...string) string) {
	dir = t.TempDir()
	env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir, "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@b",
		"GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@b", "GIT_DIR="+filepath.Join(dir, ".git"), "GIT_WORK_TREE="+dir)
	run = func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	run("init", "-q", dir)
	return dir, env, run
}
