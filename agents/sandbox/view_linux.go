package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/git-flume/git-flume/internal/proc"
)

// The sandbox's first layer (A13): the agent's own view of the machine,
// a mount namespace of its own. In it every file system is read-only
// but what the sandbox writes (its Dirs and Files, attached read-write
// from the machine's own tree); each temp folder is a new tmpfs of its
// own, where what the folder held shows read-only, but flume's runtime
// folder and tmux's socket folders, which are not there at all; and
// XDG_RUNTIME_DIR and TMUX_TMPDIR are empty folders of its own. No
// capability survives into the agent, root or not: a process that could
// mount could undo all of this.

// tempFolders are the folders every program may write temp files to.
func tempFolders(environ []string) []string {
	out := []string{"/tmp", "/var/tmp", "/dev/shm"}
	if v := envValue(environ, "TMPDIR"); filepath.IsAbs(v) {
		out = append(out, filepath.Clean(v))
	}
	return out
}

// hiddenFolders are folders a view has empty: where runtime files and
// sockets live.
func hiddenFolders(environ []string) []string {
	var out []string
	for _, name := range []string{"XDG_RUNTIME_DIR", "TMUX_TMPDIR"} {
		if v := envValue(environ, name); filepath.IsAbs(v) && filepath.Clean(v) != "/" {
			out = append(out, filepath.Clean(v))
		}
	}
	return out
}

func envValue(environ []string, name string) string {
	v := ""
	for _, kv := range environ {
		if val, ok := strings.CutPrefix(kv, name+"="); ok {
			v = val
		}
	}
	return v
}

// runtimeName is a temp folder's entry a view never shows: flume's
// runtime folder and tmux's socket folder of any user, and the X server's and
// ICE's socket folders.
var runtimeName = regexp.MustCompile(`^(flume-[0-9]+|tmux-[0-9]+|\.X1[1]-unix|\.ICE-unix)$`)

// mountStep is one step of building a view, at a path.
type mountStep struct {
	path string
	kind stepKind
	fd   int    // a detached copy of the machine's tree (attach kinds)
	link string // a symbolic link's target (link)
	dir  bool   // the copy is of a folder (attach kinds)
}

type stepKind int

// The kinds, in the order steps at one depth run.
const (
	stepTemp     stepKind = iota // a new tmpfs, open to all as /tmp is
	stepHidden                   // a new tmpfs, the user's alone
	stepShow                     // an entry of a temp folder, read-only
	stepLink                     // a symbolic link of a temp folder, made anew
	stepWritable                 // a folder or file the sandbox writes
	stepDenied                   // a folder in what it writes, shown empty and read-only
)

// testHookViewCopied, set by tests alone, runs once the machine's tree
// is copied and before anything is mounted.
var testHookViewCopied func()

// enterView builds the view in this thread's mount namespace, new and
// its own (unshared before, by the caller). Every copy of the machine's
// tree is taken before anything is mounted over it; the working folder
// is entered again at the end, found in the view (the one held before
// is the machine's, now read-only).
func (s Sandbox) enterView(environ []string) error {
	wd, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("view: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make the view's mounts its own: %w", err)
	}
	steps, err := s.viewSteps(environ)
	defer func() {
		for _, st := range steps {
			if st.fd > 0 {
				unix.Close(st.fd)
			}
		}
	}()
	if err != nil {
		return err
	}
	if testHookViewCopied != nil {
		testHookViewCopied()
	}
	if err := unix.MountSetattr(-1, "/", unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		return fmt.Errorf("make the machine read-only in the view: %w", err)
	}
	for _, st := range steps {
		err := st.run()
		if st.kind == stepShow && errors.Is(err, unix.ENOENT) {
			// an entry of another's in a temp folder, removed since it
			// was copied: it is not shown
			_ = os.Remove(st.path)
			continue
		}
		if err != nil {
			return fmt.Errorf("view: %s: %w", st.path, err)
		}
	}
	if err := os.Chdir(wd); err != nil {
		return fmt.Errorf("view: enter %s again: %w", wd, err)
	}
	return nil
}

// viewSteps are the view's steps in the order they run: a folder before
// what is mounted in it.
func (s Sandbox) viewSteps(environ []string) ([]mountStep, error) {
	var steps []mountStep
	seen := map[string]bool{}
	for _, t := range tempFolders(environ) {
		if info, err := os.Stat(t); err != nil || !info.IsDir() || seen[t] {
			continue
		}
		seen[t] = true
		var err error
		if steps, err = tempSteps(steps, t); err != nil {
			return steps, err
		}
	}
	for _, h := range hiddenFolders(environ) {
		if !seen[h] {
			seen[h] = true
			steps = append(steps, mountStep{path: h, kind: stepHidden})
		}
	}
	for _, o := range s.Objects {
		shared := filepath.Clean(o.Shared)
		if seen[shared] {
			continue
		}
		seen[shared] = true
		var err error
		if steps, err = objectSteps(steps, shared, o.Own); err != nil {
			return steps, err
		}
	}
	for _, w := range slices.Concat(s.Dirs, s.Files) {
		w = filepath.Clean(w)
		if seen[w] {
			continue
		}
		seen[w] = true
		st, err := copyOf(w, stepWritable)
		if errors.Is(err, unix.ENOENT) {
			continue // a missing file is skipped, as Landlock skips it
		}
		if err != nil {
			return steps, err
		}
		steps = append(steps, st)
	}
	steps, err := deniedSteps(steps, s.Hidden, s.ReadOnly)
	if err != nil {
		return steps, err
	}
	slices.SortStableFunc(steps, func(a, b mountStep) int {
		if d := depth(a.path) - depth(b.path); d != 0 {
			return d
		}
		return int(a.kind) - int(b.kind)
	})
	return steps, nil
}

// deniedSteps adds the steps of the folders a role's path rules deny
// (A12): each hidden one an empty read-only tmpfs, each read-only one
// itself, read-only. Each must be a folder where it is, not a link: the
// agent may have put one there in an earlier run.
func deniedSteps(steps []mountStep, hidden, readOnly []string) ([]mountStep, error) {
	for _, p := range slices.Concat(hidden, readOnly) {
		if info, err := os.Lstat(p); err != nil || !info.IsDir() {
			return steps, fmt.Errorf("view: %s is not a folder to deny", p)
		}
	}
	for _, h := range hidden {
		steps = append(steps, mountStep{path: filepath.Clean(h), kind: stepDenied})
	}
	for _, r := range readOnly {
		st, err := copyOf(filepath.Clean(r), stepShow)
		if err != nil {
			return steps, err
		}
		steps = append(steps, st)
	}
	return steps, nil
}

// tempSteps adds temp folder t's steps to steps: a tmpfs over it, where
// each entry shows read-only but flume's and tmux's folders and sockets.
func tempSteps(steps []mountStep, t string) ([]mountStep, error) {
	steps = append(steps, mountStep{path: t, kind: stepTemp})
	entries, err := os.ReadDir(t)
	if err != nil {
		return steps, fmt.Errorf("view: read %s: %w", t, err)
	}
	for _, e := range entries {
		p := filepath.Join(t, e.Name())
		switch {
		case runtimeName.MatchString(e.Name()) || e.Type()&os.ModeSocket != 0:
			continue
		case e.Type()&os.ModeSymlink != 0:
			if target, err := os.Readlink(p); err == nil {
				steps = append(steps, mountStep{path: p, kind: stepLink, link: target})
			}
			continue
		}
		st, err := copyOf(p, stepShow)
		if errors.Is(err, unix.ENOENT) {
			continue // gone meanwhile
		}
		if err != nil {
			return steps, err
		}
		steps = append(steps, st)
	}
	return steps, nil
}

// objectSteps adds an object store's steps to steps: the agent's own
// folder where the shared store is, and the shared store beneath it,
// read-only (ObjectStore). The own folder's mount point for the shared
// store must be a folder: a link there would take it elsewhere.
func objectSteps(steps []mountStep, shared, own string) ([]mountStep, error) {
	if info, err := os.Lstat(filepath.Join(own, filepath.Base(Below(shared)))); err != nil || !info.IsDir() {
		return steps, fmt.Errorf("view: %s is not as flume made it", own)
	}
	mine, err := copyOf(own, stepWritable)
	if err != nil {
		return steps, fmt.Errorf("view: %s: %w", own, err)
	}
	mine.path = shared
	below, err := copyOf(shared, stepShow)
	if err != nil {
		unix.Close(mine.fd)
		return steps, fmt.Errorf("view: %s: %w", shared, err)
	}
	below.path = Below(shared)
	return append(steps, mine, below), nil
}

func depth(p string) int { return strings.Count(p, "/") }

// copyOf takes a detached copy of the machine's tree at p, with what is
// mounted beneath it; a shown entry's copy is made read-only.
func copyOf(p string, kind stepKind) (mountStep, error) {
	info, err := os.Lstat(p)
	if err != nil {
		return mountStep{}, unix.ENOENT
	}
	fd, err := unix.OpenTree(unix.AT_FDCWD, p, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return mountStep{}, unix.ENOENT
	}
	if err != nil {
		return mountStep{}, fmt.Errorf("view: copy %s: %w", p, err)
	}
	st := mountStep{path: p, kind: kind, fd: fd, dir: info.IsDir()}
	if kind == stepShow {
		if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
			unix.Close(fd)
			return mountStep{}, fmt.Errorf("view: make %s read-only: %w", p, err)
		}
	}
	return st, nil
}

// run does the step.
func (st mountStep) run() error {
	switch st.kind {
	case stepTemp:
		return unix.Mount("tmpfs", st.path, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777")
	case stepHidden:
		return unix.Mount("tmpfs", st.path, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0700,uid="+strconv.Itoa(os.Getuid())+",gid="+strconv.Itoa(os.Getgid()))
	case stepLink:
		return os.Symlink(st.link, st.path)
	case stepDenied:
		return unix.Mount("tmpfs", st.path, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC|unix.MS_RDONLY, "mode=0500")
	}
	if err := mountPoint(st.path, st.dir); err != nil {
		return err
	}
	return unix.MoveMount(st.fd, "", unix.AT_FDCWD, st.path, unix.MOVE_MOUNT_F_EMPTY_PATH)
}

// mountPoint makes what a copy is attached on where it is missing: in a
// tmpfs of the view's, whose folders are the view's own.
func mountPoint(p string, dir bool) error {
	if _, err := os.Lstat(p); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	if dir {
		return os.Mkdir(p, 0o755)
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}

// dropCapabilities leaves this thread, and what it executes, with no
// capability: the bounding set emptied, root's special case off and
// locked (securebits), every set cleared.
func dropCapabilities() error {
	last := 40
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			last = n
		}
	}
	const secbits = 0x3f | 0xc0 // NOROOT, NO_SETUID_FIXUP, KEEP_CAPS and their locks; NO_CAP_AMBIENT_RAISE and its lock
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, secbits&^(1<<4), 0, 0, 0); err != nil && !errors.Is(err, unix.EPERM) {
		return fmt.Errorf("lock root's capabilities away: %w", err)
	}
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.EPERM) {
			return fmt.Errorf("drop capability %d: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("clear capabilities: %w", err)
	}
	return nil
}

// unshareMounts gives this thread a mount namespace of its own. The
// launcher runs on the process's first thread, locked to it, and
// executes the agent from it: the agent has this namespace.
func unshareMounts() error {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("enter a mount namespace of its own: %w", err)
	}
	return nil
}

// enterUserNamespace starts the sandbox again in a user namespace and a
// mount namespace of its own, mapped to this user alone, holding only
// the capability to mount until the view is built. A process may make a
// user namespace only while it has one thread, so this one stays as its
// parent (proc.Relay) and ends as it does.
func enterUserNamespace(args []string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find flume's own program: %w", err)
	}
	uid, gid := os.Getuid(), os.Getgid()
	err = proc.Relay(self, append([]string{os.Args[0], Subcommand, inNamespace}, args...), &syscall.SysProcAttr{
		Cloneflags:                 unix.CLONE_NEWUSER | unix.CLONE_NEWNS,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		GidMappingsEnableSetgroups: false,
		AmbientCaps:                []uintptr{unix.CAP_SYS_ADMIN},
		Pdeathsig:                  syscall.SIGKILL,
	})
	return fmt.Errorf("enter a user namespace of its own: %w", err)
}
