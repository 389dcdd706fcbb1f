package git

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/git-flume/git-flume/internal/git/gitconfig"
	"github.com/git-flume/git-flume/internal/git/ondisk"
	"github.com/git-flume/git-flume/internal/proc"
)

// ErrNotExist means git answered that the object, ref or path asked for does
// not exist. It is decided from git's exit status.
var ErrNotExist = errors.New("does not exist")

// NotRepositoryError is a directory outside any git repository. It matches
// ErrNotExist.
type NotRepositoryError struct{ Dir string }

func (e *NotRepositoryError) Error() string {
	return fmt.Sprintf("%s is not inside a git repository", e.Dir)
}

// Is makes errors.Is(err, ErrNotExist) hold.
func (e *NotRepositoryError) Is(target error) bool { return target == ErrNotExist }

// Error is a failed git invocation: its arguments, exit code and the tail of
// what it wrote to stderr.
type Error struct {
	Args   []string
	Code   int
	Stderr string
	Err    error
	// Disk says how full the filesystem was when a write failed: git says
	// only that it could not write a file.
	Disk string
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("git %s: exit %d", strings.Join(e.Args, " "), e.Code)
	if e.Code < 0 {
		msg = fmt.Sprintf("git %s: %v", strings.Join(e.Args, " "), e.Err)
	}
	if s := strings.TrimSpace(e.Stderr); s != "" {
		msg += ": " + s
	}
	if e.Disk != "" {
		msg += " (" + e.Disk + ")"
	}
	return msg
}

// fullDisk says how full the filesystem holding dir is when a write there
// failed as a full disk makes it fail (git often says only that it could
// not write a file, and cleans up before it exits, so the space it needed
// may read free again); "" otherwise.
func fullDisk(dir, stderr string) string {
	low := strings.ToLower(stderr)
	wrote := false
	for _, w := range []string{"no space left", "unable to write", "short write", "could not write", "write error", "disk quota"} {
		wrote = wrote || strings.Contains(low, w)
	}
	var fs syscall.Statfs_t
	if !wrote || dir == "" || syscall.Statfs(dir, &fs) != nil {
		return ""
	}
	free, total := fs.Bavail*uint64(fs.Bsize), fs.Blocks*uint64(fs.Bsize)
	return fmt.Sprintf("a write failed: the filesystem holding %s has %d of its %d bytes free; no space left on it is the usual cause", dir, free, total)
}

// stderrLimit bounds how much of git's stderr an Error keeps.
const stderrLimit = 4 << 10

// tail keeps the last n bytes of b, cut at a line start where possible.
func tail(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	b = b[len(b)-n:]
	if i := bytes.IndexByte(b, '\n'); i >= 0 && i < len(b)-1 {
		b = b[i+1:]
	}
	return "…" + string(b)
}

// Runner runs git. The zero value runs the git on PATH with the process
// environment.
type Runner struct {
	// Path is the git program; "" means "git" looked up on PATH.
	Path string
	// Env is the base environment for child processes; nil means os.Environ.
	Env []string
	// Ident is the author and committer of the commits flume writes.
	Ident Ident
	// OpenOnce makes Open answer each directory once for the runner's
	// life, so that everything one command does (or a watcher does in
	// all its loops) shares one Repo, its object store and main checkout,
	// and asks git once. git-flume sets it; the zero value asks each time.
	OpenOnce bool

	openedMu sync.Mutex
	opened   map[string]*Repo
}

// Ident names an author or committer.
type Ident struct{ Name, Email string }

// DefaultIdent is the fixed identity of flume's own state commits.
var DefaultIdent = Ident{Name: "git-flume", Email: "git-flume@localhost"}

func (r *Runner) env(readOnly bool, extra ...string) []string {
	base := r.Env
	if base == nil {
		base = os.Environ()
	}
	env := proc.CleanGitEnv(base)
	if readOnly {
		env = append(env, "GIT_OPTIONAL_LOCKS=0")
	}
	return append(env, extra...)
}

func (r *Runner) program() string {
	if r.Path != "" {
		return r.Path
	}
	return "git"
}

// call is one git invocation.
type call struct {
	dir      string
	args     []string
	stdin    []byte
	in       io.Reader // stdin, streamed
	readOnly bool
	common   string // the repository's common folder: a read sees its agents' own objects
	env      []string
}

// writesObjects are the reads that write objects: an object an agent
// planted in its own folder under an id git is about to write would be
// taken for it, so they never see those folders (A13).
var writesObjects = map[string]bool{"merge-tree": true}

func (r *Runner) run(ctx context.Context, c call) ([]byte, error) {
	cmd := exec.CommandContext(ctx, r.program(), c.args...)
	cmd.Dir = c.dir
	cmd.Env = r.env(c.readOnly, c.env...)
	if c.readOnly && c.common != "" && !writesObjects[c.args[0]] {
		if own := ondisk.OwnObjectFolders(c.common); len(own) > 0 {
			cmd.Env = append(cmd.Env, "GIT_ALTERNATE_OBJECT_DIRECTORIES="+strings.Join(own, ":"))
		}
	}
	if c.stdin != nil {
		cmd.Stdin = bytes.NewReader(c.stdin)
	} else if c.in != nil {
		cmd.Stdin = c.in
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		werr := wrapExit(c.args, err, stderr.Bytes())
		if gerr, ok := werr.(*Error); ok && !c.readOnly {
			gerr.Disk = fullDisk(cmp.Or(c.dir, "."), gerr.Stderr)
		}
		return stdout.Bytes(), werr
	}
	return stdout.Bytes(), nil
}

func wrapExit(args []string, err error, stderr []byte) error {
	code := -1
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		code = exitErr.ExitCode()
	}
	return &Error{Args: args, Code: code, Stderr: tail(stderr, stderrLimit), Err: err}
}

// exitCode returns the exit status of a failed git call, or -1.
func exitCode(err error) int {
	var gerr *Error
	if errors.As(err, &gerr) {
		return gerr.Code
	}
	return -1
}

// Version returns the version of the git on PATH, such as "2.39.5".
func (r *Runner) Version(ctx context.Context) (string, error) {
	out, err := r.run(ctx, call{args: []string{"version"}, readOnly: true})
	if err != nil {
		return "", err
	}
	v := strings.TrimSpace(string(out))
	v = strings.TrimPrefix(v, "git version ")
	return v, nil
}

// Repo is a git repository, addressed by absolute paths so that no
// environment variable can redirect it.
type Repo struct {
	r *Runner
	// Dir is where git runs: the work tree's top, or the git dir of a bare
	// repository.
	Dir string
	// GitDir is this checkout's git directory (a linked worktree has its own).
	GitDir string
	// CommonDir is the directory shared by all worktrees: objects and refs.
	CommonDir string
	// Bare reports whether the repository has no work tree.
	Bare bool
	// ObjectFormat is "sha1" or "sha256".
	ObjectFormat string

	// store is the storer its objects and refs are read and written
	// through, chosen once (storer.go).
	store storers
	// localConfig is the repository's own config as read in process when
	// it was found so (openInProcess); nil when git found it.
	localConfig []gitconfig.Entry
	// main is MainCheckout's answer, found once.
	main struct {
		once sync.Once
		path string
		err  error
	}
}

// Open finds the repository containing dir. It returns an error wrapping
// ErrNotExist when dir is not inside a git repository.
func (r *Runner) Open(ctx context.Context, dir string) (*Repo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open repository %q: %w", dir, err)
	}
	if !r.OpenOnce {
		return r.open(ctx, dir, abs)
	}
	r.openedMu.Lock()
	repo := r.opened[abs]
	r.openedMu.Unlock()
	if repo != nil {
		return repo, nil
	}
	// Opened without the lock: one repository that cannot be read (a
	// FIFO for its HEAD) must not hold up the others.
	repo, err = r.open(ctx, dir, abs)
	if err != nil {
		return nil, err
	}
	r.openedMu.Lock()
	defer r.openedMu.Unlock()
	if first := r.opened[abs]; first != nil {
		return first, nil
	}
	if r.opened == nil {
		r.opened = map[string]*Repo{}
	}
	r.opened[abs] = repo
	return repo, nil
}

func (r *Runner) open(ctx context.Context, dir, abs string) (*Repo, error) {
	if repo, ok := r.openInProcess(abs); ok {
		return repo, nil
	}
	// One call in the common case: a work tree answers --show-toplevel too.
	// A bare repository (or a git dir) refuses it; ask again without.
	args := []string{"rev-parse", "--path-format=absolute",
		"--is-bare-repository", "--git-dir", "--git-common-dir", "--show-object-format"}
	out, err := r.run(ctx, call{dir: abs, readOnly: true, args: append(args, "--show-toplevel")})
	if err != nil {
		out, err = r.run(ctx, call{dir: abs, readOnly: true, args: args})
	}
	if err != nil {
		if exitCode(err) == 128 {
			return nil, &NotRepositoryError{Dir: dir}
		}
		return nil, fmt.Errorf("open repository %q: %w", dir, err)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) != 4 && len(lines) != 5 {
		return nil, fmt.Errorf("open repository %q: unexpected rev-parse output %q", dir, out)
	}
	repo := &Repo{
		r:            r,
		Bare:         lines[0] == "true",
		GitDir:       lines[1],
		CommonDir:    lines[2],
		ObjectFormat: lines[3],
	}
	repo.Dir = repo.GitDir
	if len(lines) == 5 && !repo.Bare {
		repo.Dir = lines[4]
	}
	return repo, nil
}

// OpenTop opens the repository whose work tree's top is dir, reading git's
// own files when dir/.git is a plain repository folder of this user's
// (plainTop: no other work tree, not bare, SHA-1 in the files format, not
// a linked worktree's). Anything else is left to Open. Workspace members
// are such repositories by rule (P1); this spares one git process per
// member per command.
func (r *Runner) OpenTop(ctx context.Context, dir string) (*Repo, error) {
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir {
		return r.Open(ctx, dir)
	}
	if info, err := os.Lstat(filepath.Join(dir, ".git")); err == nil && info.IsDir() {
		if st, ok := statOf(dir); ok {
			if repo, ok := r.plainTop(dir, st); ok {
				return repo, nil
			}
		}
	}
	return r.Open(ctx, dir)
}

// ZeroID is the all-zero object id of the repository's hash.
func (repo *Repo) ZeroID() string {
	if repo.ObjectFormat == "sha256" {
		return strings.Repeat("0", 64)
	}
	return strings.Repeat("0", 40)
}

func (repo *Repo) read(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	return repo.r.run(ctx, call{dir: repo.Dir, args: args, stdin: stdin, readOnly: true, common: repo.CommonDir})
}

func (repo *Repo) write(ctx context.Context, stdin []byte, env []string, args ...string) ([]byte, error) {
	return repo.r.run(ctx, call{dir: repo.Dir, args: args, stdin: stdin, env: env})
}
