package sandbox

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/internal/git/ondisk"
	"github.com/git-flume/git-flume/internal/git/ownobjects"
)

// ownProbe tries, as a hostile agent's shell would, to change the
// shared objects through its view, and commits its work.
const ownProbe = `
try() { what=$1; shift; if "$@" 2>/dev/null; then echo "$what: ok"; else echo "$what: refused"; fi; }
o=$COMMON/objects
try 'commit in its place' sh -c 'echo mine > f && git add f && git commit -qm mine'
try 'read main.s objects' sh -c "git cat-file blob $BLOB | grep -q 'echo ok'"
try 'change a shared object' sh -c "chmod u+w $o/shared/$B2/$B38; echo 'rm -rf ~' > $o/shared/$B2/$B38"
try 'remove a shared object' rm $o/shared/$B2/$B38
try 'add to the shared store' sh -c "echo x > $o/shared/$B2/new"
try 'plant an object under a shared id' sh -c "mkdir -p $o/$B2 && printf x > $o/$B2/$B38"
`

// TestOwnObjectsHoldAlone_A13: behind its own view alone, an agent
// commits in its place, its new objects in a folder of its own, reads
// every shared object, and cannot change, remove or add one; an object
// it plants under a shared id stays in its folder. flume then takes its
// commit in, refuses the planted object, and the shared store passes
// fsck --full. As root and as another user, where the test runs as root.
func TestOwnObjectsHoldAlone_A13(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Run("as this user", func(t *testing.T) { ownObjectsHold(t, nil) })
		return
	}
	t.Run("as root", func(t *testing.T) { ownObjectsHold(t, nil) })
	t.Run("as nobody", func(t *testing.T) { ownObjectsHold(t, &syscall.Credential{Uid: 65534, Gid: 65534}) })
}

func ownObjectsHold(t *testing.T, as *syscall.Credential) {
	ctx := context.Background()
	dir := t.TempDir()
	os.Chmod(filepath.Dir(dir), 0o755)
	os.Chmod(dir, 0o755)
	home := filepath.Join(dir, "home")
	os.Mkdir(home, 0o755)
	os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[safe]\n\tdirectory = *\n"), 0o644)
	gitEnv := append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@a",
		"GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@a", "GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z")
	run := func(in string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = in, gitEnv
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	repoDir, tree := filepath.Join(dir, "repo"), filepath.Join(dir, "place")
	run(dir, "init", "-q", "-b", "main", repoDir)
	os.WriteFile(filepath.Join(repoDir, "test.sh"), []byte("echo ok\n"), 0o644)
	run(repoDir, "add", ".")
	run(repoDir, "commit", "-q", "-m", "base")
	run(repoDir, "worktree", "add", "-q", "-b", "w", tree)
	blob := run(repoDir, "rev-parse", "main:test.sh")
	common := filepath.Join(repoDir, ".git")
	shared := filepath.Join(common, "objects", blob[:2], blob[2:])
	before, _ := os.ReadFile(shared)
	admin := ondisk.WorktreeAdmin(common, tree)
	s := Sandbox{View: true}
	if err := s.AddWorktree(common, admin, tree, "refs/heads/w"); err != nil {
		t.Fatal(err)
	}
	if as != nil {
		filepath.Walk(dir, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, int(as.Uid), int(as.Gid)) })
	}
	self := filepath.Join(dir, "sandbox.test")
	if b, err := os.ReadFile(os.Args[0]); err != nil || os.WriteFile(self, b, 0o755) != nil {
		t.Fatalf("copy the test binary: %v", err)
	}
	cmd := exec.Command(self, append(s.Wrap(self)[1:], "sh", "-c", ownProbe)...)
	cmd.Env = append(gitEnv, "SANDBOX_VIEW_ALONE=1", "COMMON="+common, "BLOB="+blob, "B2="+blob[:2], "B38="+blob[2:], "TMPDIR="+filepath.Join(dir, "tmp"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: as}
	cmd.Dir = tree
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("probe: %v\n%s", err, out)
	}
	want := map[string]string{
		"commit in its place": "ok", "read main.s objects": "ok", "plant an object under a shared id": "ok",
		"change a shared object": "refused", "remove a shared object": "refused", "add to the shared store": "refused",
	}
	for what, res := range want {
		if !strings.Contains(string(out), what+": "+res+"\n") {
			t.Errorf("%s: want %s\n%s", what, res, out)
		}
	}
	if after, err := os.ReadFile(shared); err != nil || !bytes.Equal(before, after) {
		t.Fatalf("main's test.sh object changed: %v", err)
	}
	tip := run(repoDir, "rev-parse", "w")
	own := ondisk.OwnObjects(common, admin)
	if _, err := os.Stat(filepath.Join(own, tip[:2], tip[2:])); err != nil {
		t.Errorf("its commit is not in its own folder: %v", err)
	}
	repo, err := (&git.Runner{Env: gitEnv}).Open(ctx, repoDir)
	if err != nil {
		t.Fatal(err)
	}
	res, err := ownobjects.Import(ctx, repo, own)
	if err != nil || res.Taken != 3 || len(res.Refused) != 1 {
		t.Errorf("import: %+v, %v; want its commit, tree and blob taken and the planted object refused", res, err)
	}
	run(repoDir, "fsck", "--full", "--strict", "--no-dangling")
	if got := run(repoDir, "show", "w:f"); got != "mine" {
		t.Errorf("its work reads %q in the shared store", got)
	}
}
