package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// user runs git-flume (this test binary, under the names testscript gives
// it) as a user that is not root: CI runs as root, which file permissions
// do not stop, so there the commands run as nobody.
type user struct {
	t    *testing.T
	dir  string // owned by the user: HOME, repositories
	bin  string
	cred *syscall.Credential
	env  []string
}

// newUser prepares a user that is not root, in a folder of its own. Run as
// root, that is nobody; otherwise it is the caller.
func newUser(t *testing.T) *user {
	t.Helper()
	root, err := os.MkdirTemp("", "flume-nonroot-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		exec.Command("tmux", "-S", filepath.Join(root, "home", "tmux.sock"), "kill-server").Run()
		os.RemoveAll(root)
	})
	u := &user{t: t, dir: root, bin: filepath.Join(root, "bin")}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(u.bin, 0o755)
	for _, name := range []string{"git-flume", "fake-claude"} {
		copyFile(t, exe, filepath.Join(u.bin, name))
	}
	home := filepath.Join(root, "home")
	os.MkdirAll(filepath.Join(home, ".config", "flume"), 0o755)
	os.WriteFile(filepath.Join(home, ".config", "flume", "config"), []byte("[agent \"fake\"]\n\tcommand = fake-claude --session-id {session_id} {prompt}\n\ttranscript = {home}/.claude/projects/*/{session_id}.jsonl\n\tformat = claude\n"), 0o644)
	os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[user]\n\tname = T\n\temail = t@example.com\n[init]\n\tdefaultBranch = main\n[safe]\n\tdirectory = *\n"), 0o644)
	u.env = []string{"HOME=" + home, "PATH=" + u.bin + ":" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C", "TZ=UTC",
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "TMPDIR=" + filepath.Join(root, "tmp"), "FLUME_HOST=nonroot",
		"FLUME_TMUX_SOCKET=" + filepath.Join(home, "tmux.sock"), "FLUME_AGENT=fake", "FLUME_CONFIRM_WINDOW=3s", "FLUME_WATCH_INTERVAL=200ms"}
	os.MkdirAll(filepath.Join(root, "tmp"), 0o755)
	if os.Getuid() == 0 {
		u.cred = &syscall.Credential{Uid: 65534, Gid: 65534}
		os.Chmod(root, 0o755)
		if out, err := exec.Command("chown", "-R", "65534:65534", root).CombinedOutput(); err != nil {
			t.Fatalf("chown: %v %s", err, out)
		}
	}
	return u
}

func copyFile(t *testing.T, from, to string) {
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
}

// run runs a command as the user in dir; it returns its output and exit
// status.
func (u *user) run(dir string, extra []string, name string, args ...string) (string, int) {
	u.t.Helper()
	if name == "git-flume" || name == "fake-claude" {
		name = filepath.Join(u.bin, name) // not the test's own PATH's copy
	}
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, append(append([]string{}, u.env...), extra...)
	if u.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred}
	}
	out, err := cmd.CombinedOutput()
	code := 0
	if err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			u.t.Fatalf("%s %v: %v", name, args, err)
		}
		code = exit.ExitCode()
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	}
	return string(out), code
}

// must runs a command that must succeed.
func (u *user) must(dir string, name string, args ...string) string {
	u.t.Helper()
	out, code := u.run(dir, nil, name, args...)
	if code != 0 {
		u.t.Fatalf("%s %s: exit %d\n%s", name, strings.Join(args, " "), code, out)
	}
	return out
}

// TestReadOnlyRefsNothingLostClearError_R2: as a user that is
// not root, with refs/flume/places read-only, launch and drop fail with
// an error naming what could not be written, and nothing is half made or
// lost: no worktree or branch without its record, the records unchanged.
func TestReadOnlyRefsNothingLostClearError_R2(t *testing.T) {
	u := newUser(t)
	repo := filepath.Join(u.dir, "repo")
	u.must(u.dir, "git", "init", "-q", repo)
	u.must(repo, "git", "commit", "-q", "--allow-empty", "-m", "init")
	u.must(repo, "git-flume", "launch", "--pane", "none", "--kind", "fix", "--name", "one", "--brief", "b")
	before := u.must(repo, "git", "for-each-ref", "refs/flume", "refs/heads")
	places := filepath.Join(repo, ".git", "refs", "flume", "places")
	u.must(repo, "chmod", "0555", places)
	defer u.run(repo, nil, "chmod", "0755", places)

	out, code := u.run(repo, nil, "git-flume", "launch", "--pane", "none", "--kind", "fix", "--name", "two", "--brief", "b")
	if code == 0 || !strings.Contains(out, "refs/flume/places/fix--two") || !strings.Contains(strings.ToLower(out), "permission denied") {
		t.Errorf("launch with read-only refs: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(repo, "places", "fix--two")); err == nil {
		t.Error("a worktree was made with no record")
	}
	out, code = u.run(repo, nil, "git-flume", "drop", "fix--one")
	if code == 0 || !strings.Contains(strings.ToLower(out), "permission denied") {
		t.Errorf("drop with read-only refs: exit %d\n%s", code, out)
	}
	if after := u.must(repo, "git", "for-each-ref", "refs/flume", "refs/heads"); after != before {
		t.Errorf("refs moved:\n%s\nwas\n%s", after, before)
	}
	u.must(repo, "chmod", "0755", places)
	u.must(repo, "git-flume", "fsck")
	u.must(repo, "git-flume", "drop", "fix--one")
}

// TestFullDiskNothingLostClearError_X2: on a filesystem that fills
// up, launches go on until one fails with the device's error; every place
// that exists has its record, status and fsck still read, and what was
// made before is intact. Needs root to make the small filesystem (CI runs
// as root); the commands run as a user that is not.
func TestFullDiskNothingLostClearError_X2(t *testing.T) {
	if os.Getuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("CI must run as root to mount the small filesystem this test fills")
		}
		t.Skip("needs root to mount a small tmpfs")
	}
	u := newUser(t)
	disk := filepath.Join(u.dir, "disk")
	os.MkdirAll(disk, 0o755)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1200k,uid=65534,gid=65534", "tmpfs", disk).CombinedOutput(); err != nil {
		t.Fatalf("mount a small tmpfs: %v %s", err, out)
	}
	defer exec.Command("umount", "-l", disk).Run()
	repo := filepath.Join(disk, "repo")
	u.must(disk, "git", "init", "-q", repo)
	u.must(repo, "sh", "-c", "head -c 300000 /dev/urandom > big.bin && git add big.bin && git commit -q -m init")
	made, failed := 0, ""
	for i := 0; i < 40 && failed == ""; i++ {
		out, code := u.run(repo, nil, "git-flume", "launch", "--pane", "none", "--kind", "fix", "--name", fmt.Sprintf("p%d", i), "--brief", "b")
		if code != 0 {
			failed = out
			break
		}
		made++
	}
	if failed == "" {
		t.Fatal("the disk never filled")
	}
	if !strings.Contains(strings.ToLower(failed), "no space left") {
		t.Errorf("the failing launch does not say the disk is full:\n%s", failed)
	}
	// Room for the reads: the checks below must not fail for want of it.
	u.must(disk, "sh", "-c", "rm -rf repo/places/*/big.bin 2>/dev/null; true")
	out := u.must(repo, "git-flume", "status", "--json")
	var st struct {
		Places []struct {
			Place, Worktree string
		} `json:"places"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status: %v\n%s", err, out)
	}
	if len(st.Places) < made {
		t.Errorf("%d places made, status shows %d", made, len(st.Places))
	}
	entries, _ := os.ReadDir(filepath.Join(repo, "places"))
	for _, e := range entries {
		found := false
		for _, p := range st.Places {
			found = found || p.Place == e.Name()
		}
		if !found {
			t.Errorf("worktree %s has no record", e.Name())
		}
	}
	if out, code := u.run(repo, nil, "git", "fsck", "--no-dangling"); code != 0 {
		t.Errorf("git fsck after a full disk: %s", out)
	}
}

// TestPromotionKilledAtEveryStepAsUser_P6_P7: as a user that
// is not root, a workspace promotion of three repositories is killed with
// SIGKILL at every step (FLUME_FAULT: a test build kills itself there);
// reconcile and a second promote finish it, every repository's main ends
// at its promoted tip, and no commit is left unreachable.
func TestPromotionKilledAtEveryStepAsUser_P6_P7(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tmux is not installed: apt-get install tmux")
		}
		t.Skip("tmux is not installed")
	}
	u := newUser(t)
	ws := filepath.Join(u.dir, "ws")
	u.must(u.dir, "mkdir", "-p", ws)
	names := []string{"a", "b", "c"}
	for _, n := range names {
		u.must(ws, "git", "init", "-q", n)
		u.must(filepath.Join(ws, n), "git", "commit", "-q", "--allow-empty", "-m", "base")
	}
	plan := filepath.Join(u.dir, "home", "plan")
	u.must(u.dir, "sh", "-c", "echo 'commitin a {workspace}.txt; commitin b {workspace}.txt; commitin c {workspace}.txt; say done' > "+plan)
	var points []string
	for i := range names {
		for _, p := range []string{"before-move", "after-move", "after-switch", "after-receipt"} {
			points = append(points, fmt.Sprintf("%s:%d", p, i))
		}
	}
	for n, point := range points {
		id := fmt.Sprintf("k%d", n)
		req := fmt.Sprintf(`{"id": %q, "goal": "Change all three.", "repositories": {"a": %q, "b": %q, "c": %q},
  "tasks": [{"id": "change", "kind": "changeset", "requirements": "Change them.", "deliverable": "A clean commit in each.",
    "checks": [{"repository": "a", "command": "true"}, {"repository": "b", "command": "true"}, {"repository": "c", "command": "true"}]}],
  "finalChecks": [{"repository": "a", "command": "true"}, {"repository": "b", "command": "true"}, {"repository": "c", "command": "true"}]}`,
			id, filepath.Join(ws, "a"), filepath.Join(ws, "b"), filepath.Join(ws, "c"))
		reqFile := filepath.Join(u.dir, "home", id+".json")
		u.must(u.dir, "sh", "-c", "cat > "+reqFile+" <<'EOF'\n"+req+"\nEOF")
		env := []string{"FAKE_PLAN=" + plan, "FLUME_PANE=tmux"}
		if out, code := u.run(ws, env, "git-flume", "workspace", "start", reqFile); code != 0 || !strings.Contains(out, "checked") {
			t.Fatalf("%s: start: exit %d\n%s", point, code, out)
		}
		expected := func(field string) string {
			var st map[string]json.RawMessage
			json.Unmarshal([]byte(u.must(ws, "git-flume", "workspace", "status", "--id", id, "--json")), &st)
			path := filepath.Join(u.dir, "home", id+"-"+field+".json")
			u.must(u.dir, "sh", "-c", "cat > "+path+" <<'EOF'\n"+string(st[field])+"\nEOF")
			return path
		}
		u.must(ws, "git-flume", "workspace", "stage", "--id", id, "--expected", expected("candidates"))
		tips := expected("tips")
		u.must(ws, "git-flume", "workspace", "validate", "--id", id, "--expected", tips)
		out, code := u.run(ws, []string{"FLUME_FAULT=" + point}, "git-flume", "workspace", "promote", "--id", id, "--expected", tips)
		if code != 137 {
			t.Fatalf("%s: not killed there: exit %d\n%s", point, code, out)
		}
		if out, code := u.run(ws, nil, "git-flume", "workspace", "reconcile", "--id", id); code != 0 {
			t.Fatalf("%s: reconcile: exit %d\n%s", point, code, out)
		}
		out, code = u.run(ws, nil, "git-flume", "workspace", "promote", "--id", id, "--expected", tips)
		if code != 0 || !strings.Contains(out, "promoted") {
			t.Fatalf("%s: promote after reconcile: exit %d\n%s", point, code, out)
		}
		var tipMap map[string]struct{ Commit string }
		data, _ := os.ReadFile(tips)
		json.Unmarshal(data, &tipMap)
		for _, n := range names {
			repo := filepath.Join(ws, n)
			head := strings.TrimSpace(u.must(repo, "git", "rev-parse", "main"))
			if want := tipMap[n].Commit; want == "" || head != want {
				t.Errorf("%s: %s's main at %s, want its promoted tip %q", point, n, head, want)
			}
			// Nothing lost: a commit left unreachable may only be a record's
			// state commit whose compare-and-swap the kill cut short, never
			// work (a tree of anything but state.json).
			for _, line := range strings.Split(u.must(repo, "git", "fsck", "--unreachable", "--no-reflogs"), "\n") {
				id, ok := strings.CutPrefix(line, "unreachable commit ")
				if !ok {
					continue
				}
				if files := strings.TrimSpace(u.must(repo, "git", "ls-tree", "--name-only", id)); files != "state.json" {
					t.Errorf("%s: %s lost commit %s (%s): %s", point, n, id, files, u.must(repo, "git", "log", "-1", "--format=%s", id))
				}
			}
		}
	}
}
