package git

import (
	"errors"
	"io/fs"
	"os"
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

// openInProcess finds the repository containing abs as `git rev-parse`
// would, in the plain case only; ok is false when git must answer.
func (r *Runner) openInProcess(abs string) (repo *Repo, ok bool) {
	if gitconfig.Overridden(r.envLookup) {
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
// config --includes --list` would; ok is false when git must.
func (r *Runner) configInProcess(repo *Repo) ([]gitconfig.Entry, bool) {
	return gitconfig.Scopes(r.envLookup, r.program(), repo.localConfig)
}
