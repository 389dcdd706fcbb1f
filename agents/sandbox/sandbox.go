package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"

	"github.com/git-flume/git-flume/internal/git/ondisk"
	"github.com/git-flume/git-flume/internal/proc"
)

// Subcommand is the hidden command that enters a sandbox and executes
// the agent: git-flume agent-sandbox [--dir D]... [--file F]... -- ARGV.
const Subcommand = "agent-sandbox"

// MinABI is the least Landlock version a sandbox needs: 3, the first
// that also refuses truncating a file it may not write.
const MinABI = 3

// Sandbox is what an agent may write.
type Sandbox struct {
	// Dirs are written, made and removed beneath.
	Dirs []string
	// Files are written in place only: no file is made or removed beside
	// them. One missing is skipped.
	Files []string
	// View: the agent gets its own view of the machine too (A13's first
	// layer), where all else is read-only.
	View bool
	// Objects are the object stores the agent writes only a folder of
	// its own for, in its view (A13's private objects).
	Objects []ObjectStore
	// Hidden are folders, within what it writes, that its view shows
	// empty and read-only; ReadOnly are ones it shows as they are,
	// read-only: a role's path rules held for every tool (A12). Each must
	// be a folder, not a link, when the view is built; they need the view.
	Hidden, ReadOnly []string
}

// ObjectStore is a repository's shared object store and the agent's own
// folder beside it. In the agent's view, Own is mounted where Shared is,
// and Shared beneath it, read-only, at Below(Shared), named in Own as
// its alternate: the agent's git reads every shared object and writes
// new ones in Own alone. flume takes them into the shared store
// (internal/git/ownobjects), where each is hashed again.
type ObjectStore struct{ Shared, Own string }

// Below is where, in the agent's view, the shared store at shared shows,
// read-only, beneath the agent's own folder.
func Below(shared string) string { return filepath.Join(shared, "shared") }

// AddWorktree lets the sandbox write what a commit on branch (a full ref
// name) in the linked worktree at tree writes: the tree, the repository's
// object store, git's folder for the worktree (admin), the branch's ref
// folder (git writes a ref as a lock file beside it, then renames it) and
// its reflog, appended to in place. The ref folder must exist.
func (s *Sandbox) AddWorktree(commonDir, admin, tree, branch string) error {
	refDir := filepath.Dir(filepath.Join(commonDir, filepath.FromSlash(branch)))
	if info, err := os.Stat(refDir); err != nil || !info.IsDir() {
		return fmt.Errorf("branch %s has no folder %s to commit through", strings.TrimPrefix(branch, "refs/heads/"), refDir)
	}
	objects := filepath.Join(commonDir, "objects")
	s.Dirs = append(s.Dirs, tree, objects, admin, refDir)
	s.Files = append(s.Files, ondisk.ReflogPath(commonDir, branch))
	if !slices.ContainsFunc(s.Objects, func(o ObjectStore) bool { return o.Shared == objects }) {
		own := ondisk.OwnObjects(commonDir, admin)
		if err := prepareOwn(own, objects); err != nil {
			return fmt.Errorf("the agent's own object folder %s: %w", own, err)
		}
		s.Objects = append(s.Objects, ObjectStore{Shared: objects, Own: own})
	}
	return nil
}

// Tree is a linked worktree an agent commits in: its repository's common
// folder, its path, and its branch (a full ref name).
type Tree struct{ CommonDir, Path, Branch string }

// ForTrees is the sandbox of an agent that commits in trees (git's folder
// for each found by ondisk.WorktreeAdmin) and keeps its state in
// stateDirs (made when missing) and stateFiles, with what every program
// writes (AddCommon); an error where the kernel cannot hold it.
func ForTrees(environ []string, trees []Tree, stateDirs, stateFiles []string) (*Sandbox, error) {
	if why := Unavailable(); why != "" {
		return nil, errors.New(why)
	}
	sb := &Sandbox{}
	for _, t := range trees {
		admin := ondisk.WorktreeAdmin(t.CommonDir, t.Path)
		if admin == "" {
			return nil, fmt.Errorf("worktree %s has no folder in git", t.Path)
		}
		if err := sb.AddWorktree(t.CommonDir, admin, t.Path, t.Branch); err != nil {
			return nil, err
		}
	}
	for _, d := range stateDirs {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	sb.AddCommon(environ)
	sb.Dirs, sb.Files = append(sb.Dirs, stateDirs...), append(sb.Files, stateFiles...)
	return sb, nil
}

// Note is what a run's record says of its sandbox: "landlock", or "off: "
// and why it has none.
func Note(sb *Sandbox, why string) string {
	if sb != nil {
		return "landlock"
	}
	return "off: " + why
}

// AddCommon lets the sandbox write what every program writes: the temp
// folder (TMPDIR of environ, else /tmp) and /dev; and gives it its own
// view of the machine where this one holds it (A13), where that temp
// folder is its own.
func (s *Sandbox) AddCommon(environ []string) {
	s.View = ViewUnavailable() == ""
	tmp := "/tmp"
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "TMPDIR="); ok && filepath.IsAbs(v) {
			tmp = v
		}
	}
	s.Dirs = append(s.Dirs, tmp, "/dev")
}

// LandlockABI is the kernel's Landlock version, 0 where it has none or it
// is off.
func LandlockABI() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil || v < 0 {
		return 0
	}
	return v
}

// Unavailable says why no sandbox can be entered here, "" when one
// can.
func Unavailable() string {
	switch v := LandlockABI(); {
	case v == 0:
		return "this kernel has no Landlock (Linux 5.13 or later, with landlock among its security modules)"
	case v < MinABI:
		return fmt.Sprintf("this kernel's Landlock is version %d; an agent's sandbox needs version %d (Linux 6.2 or later)", v, MinABI)
	}
	return ""
}

// Wrap is the start of the command line that runs a command inside the
// sandbox, entered by flume's own program (exe): the command follows it.
func (s *Sandbox) Wrap(exe string) []string {
	out := []string{exe, Subcommand}
	for _, d := range s.Dirs {
		out = append(out, "--dir", d)
	}
	for _, f := range s.Files {
		out = append(out, "--file", f)
	}
	if s.View {
		out = append(out, "--view")
		for _, o := range s.Objects {
			out = append(out, "--objects", o.Shared, o.Own)
		}
		for _, h := range s.Hidden {
			out = append(out, "--hide", h)
		}
		for _, r := range s.ReadOnly {
			out = append(out, "--read-only", r)
		}
	}
	return append(out, "--")
}

// inNamespace marks the second process of a view entered through a user
// namespace (enterUserNamespace): its namespaces are made already.
const inNamespace = "--in-namespace"

// Parse reads the arguments Wrap wrote after the command's name.
func Parse(args []string) (Sandbox, []string, error) {
	s, argv, _, err := parse(args)
	return s, argv, err
}

// parse is Parse, and whether the arguments say the namespaces are made.
func parse(args []string) (s Sandbox, argv []string, inner bool, err error) {
	for len(args) > 0 {
		switch {
		case args[0] == "--view":
			s.View = true
			args = args[1:]
			continue
		case args[0] == inNamespace:
			inner = true
			args = args[1:]
			continue
		case len(args) >= 3 && args[0] == "--objects":
			s.Objects = append(s.Objects, ObjectStore{Shared: args[1], Own: args[2]})
			args = args[3:]
			continue
		case args[0] == "--":
			if len(args) == 1 {
				return s, nil, inner, errors.New("agent-sandbox: no command after --")
			}
			return s, args[1:], inner, nil
		case len(args) >= 2 && args[0] == "--dir":
			s.Dirs = append(s.Dirs, args[1])
		case len(args) >= 2 && args[0] == "--file":
			s.Files = append(s.Files, args[1])
		case len(args) >= 2 && args[0] == "--hide":
			s.Hidden = append(s.Hidden, args[1])
		case len(args) >= 2 && args[0] == "--read-only":
			s.ReadOnly = append(s.ReadOnly, args[1])
		default:
			return s, nil, inner, fmt.Errorf("agent-sandbox: unexpected %q", args[0])
		}
		args = args[2:]
	}
	return s, nil, inner, errors.New("agent-sandbox: no command")
}

// writeRights are the rights a sandbox handles: every way to change the
// file system (Landlock 3). Reading and executing stay the user's.
const writeRights = ll.AccessFSWriteFile | ll.AccessFSRemoveDir | ll.AccessFSRemoveFile |
	ll.AccessFSMakeChar | ll.AccessFSMakeDir | ll.AccessFSMakeReg | ll.AccessFSMakeSock |
	ll.AccessFSMakeFifo | ll.AccessFSMakeBlock | ll.AccessFSMakeSym | ll.AccessFSRefer |
	ll.AccessFSTruncate

// fileRights are those of a file written in place.
const fileRights = ll.AccessFSWriteFile | ll.AccessFSTruncate

// Enter restricts this process, and every process it starts, to the
// sandbox's Landlock and seccomp layers. It fails, restricting nothing,
// where the kernel cannot hold it or a folder is missing: an agent never
// runs believed sandboxed and not.
func (s Sandbox) Enter() error {
	if err := s.restrict(); err != nil {
		return err
	}
	return refuseSideDoors()
}

// restrict enters the Landlock layer.
func (s Sandbox) restrict() error {
	if why := Unavailable(); why != "" {
		return errors.New(why)
	}
	cfg := landlock.Config{HandledAccessFS: writeRights}
	if LandlockABI() >= 6 {
		cfg.Scoped = ll.ScopeSignal | ll.ScopeAbstractUnixSocket
	}
	rules := []landlock.Rule{landlock.PathAccess(writeRights, s.Dirs...)}
	var files []string
	for _, f := range s.Files {
		if info, err := os.Stat(f); err == nil && info.Mode().IsRegular() {
			files = append(files, f)
		}
	}
	if len(files) > 0 {
		rules = append(rules, landlock.PathAccess(fileRights, files...))
	}
	if err := cfg.Restrict(rules...); err != nil {
		return fmt.Errorf("enter the agent's sandbox: %w", err)
	}
	return nil
}

// Exec is agent-sandbox's work: enter the sandbox, then replace
// this process with argv, found on this environment's PATH, with this
// environment. It returns only on failure.
func Exec(args []string) error { return execBehind(args, allLayers) }

// layers are the sandbox's layers to enter: all of them, but where one
// is tested alone.
type layers int

const (
	layerView layers = 1 << iota
	layerFilter
	layerLandlock
	allLayers = layerView | layerFilter | layerLandlock
)

func execBehind(args []string, with layers) error {
	s, argv, inner, err := parse(args)
	if err != nil {
		return err
	}
	env := slices.Clone(os.Environ())
	if s.View && with&layerView != 0 {
		if !inner {
			if os.Geteuid() != 0 {
				return enterUserNamespace(args)
			}
			if err := unshareMounts(); err != nil {
				return err
			}
		}
		if err := s.enterView(env); err != nil {
			return err
		}
		if err := dropCapabilities(); err != nil {
			return err
		}
	}
	if with&layerLandlock != 0 {
		if err := s.restrict(); err != nil {
			return err
		}
	}
	if with&layerFilter != 0 {
		if err := refuseSideDoors(); err != nil {
			return err
		}
	}
	path, err := proc.LookPath(argv[0], env)
	if err != nil {
		return fmt.Errorf("find %s on the agent's PATH: %w", argv[0], err)
	}
	return syscall.Exec(path, argv, env)
}
