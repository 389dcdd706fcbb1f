package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// viewHelper is the child of TestViewHoldsAlone_A13: started as
// "agent-sandbox" arguments, it enters the view alone (no filter, no
// Landlock) and executes the probe, as the launcher executes an agent.
func viewHelper() int {
	runtime.LockOSThread()
	if gone := os.Getenv("SANDBOX_VIEW_GONE"); gone != "" {
		// another's temp entry removed while the view is built
		testHookViewCopied = func() { os.RemoveAll(gone) }
	}
	err := execBehind(os.Args[2:], layerView)
	os.Stdout.WriteString("enter: " + err.Error() + "\n")
	return 1
}

// viewProbe tries, as an agent's shell would, what the view must hold;
// each line is one attempt and its result.
const viewProbe = `
try() { what=$1; shift; if "$@" 2>/dev/null; then echo "$what: ok"; else echo "$what: refused"; fi; }
try 'write its place' sh -c "echo x > $D/in/a"
try 'write where it works' sh -c "echo x > b"
try 'write beside its place' sh -c "echo x > $D/outside"
try 'write the file it may' sh -c "echo x >> $D/log"
try 'write its home' sh -c "echo x >> $HOME/.bashrc"
try 'write a temp file' sh -c "echo x > $TMPDIR/new"
try 'write a temp entry that was there' sh -c "echo x >> $TMPDIR/kept"
try 'read a temp entry that was there' grep -q keep $TMPDIR/kept
try 'see a temp entry removed meanwhile' test -e $TMPDIR/gone
try 'see flume.s runtime folder' test -e $TMPDIR/flume-` + "`id -u`" + `
try 'see tmux.s socket folder' test -e $TMPDIR/tmux-` + "`id -u`" + `
try 'see the runtime folder.s files' test -e $XDG_RUNTIME_DIR/bus
try 'write /etc' sh -c "echo x >> /etc/hostname"
try 'hold a capability' sh -c "grep -q '^CapEff:.*[1-9a-f]' /proc/self/status"
try 'mount over its place' mount -t tmpfs none $D/in
try 'read a hidden folder' cat $D/in/secrets/key.pem
try 'write a hidden folder' sh -c "echo x > $D/in/secrets/new"
try 'move a hidden folder away' mv $D/in/secrets $D/in/moved
try 'read a read-only folder' grep -q keep $D/in/docs/guide.md
try 'write a read-only folder' sh -c "echo x >> $D/in/docs/guide.md"
try 'remove from a read-only folder' rm -f $D/in/docs/guide.md
`

// TestViewHoldsAlone_A13: behind its own view alone, a process writes its
// place and the file it may, a temp folder of its own where what was
// there shows read-only and flume's and tmux's folders are not, nothing
// else (its home, the folder beside its place, /etc), holds no
// capability and cannot mount; what it wrote to temp is not seen
// outside. A folder of its place a role's rules hide is empty and
// read-only to it, and one they let it read only is read-only (A12). As root (a mount namespace) and as another user (a user
// namespace too), where the test runs as root.
func TestViewHoldsAlone_A13(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Run("as this user", func(t *testing.T) { viewHolds(t, nil) })
		return
	}
	t.Run("as root", func(t *testing.T) { viewHolds(t, nil) })
	t.Run("as nobody", func(t *testing.T) { viewHolds(t, &syscall.Credential{Uid: 65534, Gid: 65534}) })
}

func viewHolds(t *testing.T, as *syscall.Credential) {
	dir := t.TempDir()
	os.Chmod(filepath.Dir(dir), 0o755) // t.TempDir makes it its user's alone
	os.Chmod(dir, 0o755)
	uid := os.Getuid()
	if as != nil {
		uid = int(as.Uid)
	}
	tmp, run, home := filepath.Join(dir, "tmp"), filepath.Join(dir, "run"), filepath.Join(dir, "home")
	for _, d := range []string{"in", "in/secrets", "in/docs", "tmp", "run", "home", "tmp/gone", "tmp/flume-" + strconv.Itoa(uid), "tmp/tmux-" + strconv.Itoa(uid)} {
		os.Mkdir(filepath.Join(dir, d), 0o755)
	}
	for f, data := range map[string]string{"outside": "keep", "log": "", "in/secrets/key.pem": "keep", "in/docs/guide.md": "keep", "tmp/kept": "keep", "run/bus": "", "home/.bashrc": "keep"} {
		os.WriteFile(filepath.Join(dir, f), []byte(data), 0o644)
	}
	if as != nil {
		filepath.Walk(dir, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, int(as.Uid), int(as.Gid)) })
	}
	// The test binary, where the other user may run it too.
	self := filepath.Join(dir, "sandbox.test")
	if b, err := os.ReadFile(os.Args[0]); err != nil || os.WriteFile(self, b, 0o755) != nil {
		t.Fatalf("copy the test binary: %v", err)
	}
	s := Sandbox{Dirs: []string{filepath.Join(dir, "in")}, Files: []string{filepath.Join(dir, "log")}, View: true,
		Hidden: []string{filepath.Join(dir, "in", "secrets")}, ReadOnly: []string{filepath.Join(dir, "in", "docs")}}
	args := append(s.Wrap(self)[1:], "sh", "-c", viewProbe)
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), "SANDBOX_VIEW_ALONE=1", "SANDBOX_VIEW_GONE="+filepath.Join(tmp, "gone"), "D="+dir, "TMPDIR="+tmp, "XDG_RUNTIME_DIR="+run, "HOME="+home)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: as}
	cmd.Dir = filepath.Join(dir, "in")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("probe: %v\n%s", err, out)
	}
	want := map[string]string{
		"write its place": "ok", "write where it works": "ok", "write the file it may": "ok", "write a temp file": "ok",
		"read a temp entry that was there": "ok",
		"write beside its place":           "refused", "write its home": "refused",
		"write a temp entry that was there": "refused", "see flume.s runtime folder": "refused",
		"see tmux.s socket folder": "refused", "see the runtime folder.s files": "refused",
		"see a temp entry removed meanwhile": "refused",
		"write /etc":                         "refused", "hold a capability": "refused", "mount over its place": "refused",
		// a role's path rules, held for a shell too (A12)
		"read a hidden folder": "refused", "write a hidden folder": "refused", "move a hidden folder away": "refused",
		"read a read-only folder": "ok", "write a read-only folder": "refused", "remove from a read-only folder": "refused",
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if what, res, ok := strings.Cut(line, ": "); ok {
			got[what] = res
		}
	}
	for what, res := range want {
		if got[what] != res {
			t.Errorf("%s: %q, want %q\n%s", what, got[what], res, out)
		}
	}
	if _, err := os.Stat(filepath.Join(tmp, "new")); err == nil {
		t.Error("the temp file it wrote is seen outside its view")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "in", "a")); string(b) != "x\n" {
		t.Errorf("its place holds %q outside, want what it wrote", b)
	}
	for _, f := range []string{"outside", "tmp/kept", "home/.bashrc", "in/secrets/key.pem", "in/docs/guide.md"} {
		if b, _ := os.ReadFile(filepath.Join(dir, f)); string(b) != "keep" {
			t.Errorf("%s holds %q, want it unchanged", f, b)
		}
	}
}

// noTempVarsProbe is viewProbe's part that matters where TMPDIR,
// XDG_RUNTIME_DIR and TMUX_TMPDIR are unset: the place is under /tmp.
const noTempVarsProbe = `
try() { what=$1; shift; if "$@" 2>/dev/null; then echo "$what: ok"; else echo "$what: refused"; fi; }
try 'write its place' sh -c "echo x > $D/in/a"
try 'write beside its place' sh -c "echo x > $D/outside"
try 'write a temp file' sh -c "echo x > /tmp/$NEW"
try 'write /var/tmp' sh -c "echo x > /var/tmp/$NEW"
try 'see flume.s runtime folder' test -e /tmp/flume-` + "`id -u`" + `
try 'see tmux.s socket folder' test -e /tmp/tmux-` + "`id -u`" + `
`

// TestViewWithNoTempVariables_A13: with TMPDIR, XDG_RUNTIME_DIR and
// TMUX_TMPDIR unset and the place under /tmp (where flume's runtime
// folder and tmux's sockets then are), the view alone still lets it write
// its place alone, /tmp and /var/tmp its own, and hides flume's and
// tmux's folders.
func TestViewWithNoTempVariables_A13(t *testing.T) {
	dir, err := os.MkdirTemp("/tmp", "flume-view-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	os.Mkdir(filepath.Join(dir, "in"), 0o755)
	os.WriteFile(filepath.Join(dir, "outside"), []byte("keep"), 0o644)
	for _, d := range []string{"/tmp/flume-" + strconv.Itoa(os.Getuid()), "/tmp/tmux-" + strconv.Itoa(os.Getuid())} {
		if err := os.Mkdir(d, 0o700); err == nil {
			t.Cleanup(func() { os.Remove(d) })
		}
	}
	var env []string
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); name != "TMPDIR" && name != "XDG_RUNTIME_DIR" && name != "TMUX_TMPDIR" {
			env = append(env, kv)
		}
	}
	newName := filepath.Base(dir) + "-new"
	s := Sandbox{Dirs: []string{filepath.Join(dir, "in")}, View: true}
	cmd := exec.Command(os.Args[0], append(s.Wrap(os.Args[0])[1:], "sh", "-c", noTempVarsProbe)...)
	cmd.Env = append(env, "SANDBOX_VIEW_ALONE=1", "D="+dir, "NEW="+newName)
	cmd.Dir = filepath.Join(dir, "in")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("probe: %v\n%s", err, out)
	}
	want := map[string]string{"write its place": "ok", "write a temp file": "ok", "write /var/tmp": "ok",
		"write beside its place": "refused", "see flume.s runtime folder": "refused", "see tmux.s socket folder": "refused"}
	for what, res := range want {
		if !strings.Contains(string(out), what+": "+res+"\n") {
			t.Errorf("%s: want %s\n%s", what, res, out)
		}
	}
	for _, p := range []string{"/tmp/" + newName, "/var/tmp/" + newName} {
		if _, err := os.Stat(p); err == nil {
			os.Remove(p)
			t.Errorf("%s, written in its view, is seen outside", p)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "outside")); string(b) != "keep" {
		t.Errorf("the file beside its place holds %q", b)
	}
}
