package git

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/git-flume/git-flume/internal/git/gitconfig"
	"github.com/git-flume/git-flume/internal/git/ondisk"
)

// Finding the repository and reading its configuration in process (issue
// 26): `git rev-parse` and `git config --list` were two of the processes
// every command started before doing anything. Only the plain case is
// read here: a work tree whose .git is a folder of a SHA-1 repository in
// the files format, owned by this user, reached without crossing a file
// system, with no include and no setting from the command line.
// Everything else (a linked worktree, a bare repository, a submodule,
// GIT_CEILING_DIRECTORIES, safe.directory's cases, an unknown system
// config location) is git's to answer, as before.

// envLookup reads a variable of the environment git would run with.
func (r *Runner) envLookup(name string) (string, bool) {
	env := r.Env
	if env == nil {
		return os.LookupEnv(name)
	}
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// fromCommandLine reports what makes git, not this package, the one to
// answer: settings given as `git -c` (GIT_CONFIG_PARAMETERS, whose
// quoting is git's) or that change how discovery goes, and settings from
// GIT_CONFIG_COUNT that gitconfig.FromCount cannot read as git would or
// that bear on finding the repository.
func (r *Runner) fromCommandLine() bool {
	for _, name := range []string{"GIT_CONFIG_PARAMETERS", "GIT_CONFIG", "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM"} {
		if _, ok := r.envLookup(name); ok {
			return true
		}
	}
	entries, ok := gitconfig.FromCount(r.envLookup)
	if !ok {
		return true
	}
	for _, e := range entries {
		switch {
		case gitconfig.Includes(e), strings.HasPrefix(e.Key, "extensions."), strings.HasPrefix(e.Key, "safe."),
			e.Key == "core.bare", e.Key == "core.worktree", e.Key == "core.repositoryformatversion":
			return true
		}
	}
	return false
}

// openInProcess finds the repository containing abs as `git rev-parse`
// would, in the plain case only; ok is false when git must answer.
func (r *Runner) openInProcess(abs string) (repo *Repo, ok bool) {
	if r.fromCommandLine() {
		return nil, false
	}
	dir, err := filepath.EvalSymlinks(abs) // git works in the real path
	if err != nil {
		return nil, false
	}
	start, ok := statOf(dir)
	if !ok {
		return nil, false
	}
	for {
		st, ok := statOf(dir)
		if !ok || st.Dev != start.Dev {
			return nil, false
		}
		info, err := os.Lstat(filepath.Join(dir, ".git"))
		switch {
		case err == nil && info.IsDir():
			return r.plainTop(dir, st)
		case err == nil || !errors.Is(err, fs.ErrNotExist):
			return nil, false // a gitfile (linked worktree, submodule) or unreadable
		}
		// A folder that is itself a git directory (bare, or inside .git).
		for _, name := range []string{"HEAD", "objects", "refs"} {
			if _, err := os.Lstat(filepath.Join(dir, name)); !errors.Is(err, fs.ErrNotExist) {
				return nil, false
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return nil, false // no repository: git says so in its words
		}
		dir = parent
	}
}

// plainTop opens the work tree top whose .git folder was found, when both
// are this user's and the repository is plain (gitconfig.PlainGitDir).
func (r *Runner) plainTop(top string, st *syscall.Stat_t) (*Repo, bool) {
	gitDir := filepath.Join(top, ".git")
	gst, ok := statOf(gitDir)
	if !ok || int(st.Uid) != os.Geteuid() || int(gst.Uid) != os.Geteuid() {
		return nil, false // safe.directory is git's to judge
	}
	for _, name := range []string{"objects", "refs"} {
		if info, err := os.Stat(filepath.Join(gitDir, name)); err != nil || !info.IsDir() {
			return nil, false
		}
	}
	// A HEAD git would not take makes it look further up.
	var buf [256]byte
	head, err := ondisk.ReadSmall(filepath.Join(gitDir, "HEAD"), buf[:])
	if ref, isRef := strings.CutPrefix(string(head), "ref: refs/"); err != nil || (!isRef && !ondisk.IsSHA1ID(strings.TrimSpace(string(head)))) || (isRef && strings.TrimSpace(ref) == "") {
		return nil, false
	}
	local, ok := gitconfig.PlainGitDir(gitDir)
	if !ok {
		return nil, false
	}
	repo := &Repo{r: r, Dir: top, GitDir: gitDir, CommonDir: gitDir, ObjectFormat: "sha1"}
	repo.localConfig = local
	return repo, true
}

func statOf(path string) (*syscall.Stat_t, bool) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return nil, false
	}
	return &st, true
}

// configInProcess lists repo's configuration in every scope as `git
// config --includes --list` would (system, global, local); ok is false
// when git must.
func (r *Runner) configInProcess(repo *Repo) ([]gitconfig.Entry, bool) {
	if repo.localConfig == nil || r.fromCommandLine() {
		return nil, false
	}
	var files []string
	if system, ok := r.systemConfig(); !ok {
		return nil, false
	} else if system != "" {
		files = append(files, system)
	}
	files = append(files, gitconfig.GlobalFiles(r.envLookup)...)
	all, ok := gitconfig.ReadFiles(files)
	if !ok {
		return nil, false
	}
	cmdline, ok := gitconfig.FromCount(r.envLookup)
	if !ok {
		return nil, false
	}
	all = append(all, repo.localConfig...)
	return append(all, cmdline...), true
}

// systemConfig is the system-wide config file git reads: none under
// GIT_CONFIG_NOSYSTEM, GIT_CONFIG_SYSTEM when set, else the one its build
// names (gitconfig.SystemFile). ok is false where only git knows.
func (r *Runner) systemConfig() (path string, ok bool) {
	if v, set := r.envLookup("GIT_CONFIG_NOSYSTEM"); set {
		if on, known := gitconfig.Bool(v); !known {
			return "", false
		} else if on {
			return "", true
		}
	}
	if v, set := r.envLookup("GIT_CONFIG_SYSTEM"); set {
		return v, v != ""
	}
	prog := r.program()
	if !filepath.IsAbs(prog) {
		var err error
		if prog, err = lookPathIn(prog, r); err != nil {
			return "", false
		}
	}
	return gitconfig.SystemFile(prog)
}

// lookPathIn finds prog on the PATH of the environment git runs with.
func lookPathIn(prog string, r *Runner) (string, error) {
	path, _ := r.envLookup("PATH")
	if r.Env == nil {
		return exec.LookPath(prog)
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, prog)
		if info, err := os.Stat(p); err == nil && !info.IsDir() && info.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}
