package gitconfig

import (
	"os"
	"path/filepath"
	"strings"
)

// Lookup reads a variable of the environment git runs with.
type Lookup func(name string) (string, bool)

// Overridden reports what makes git, not a reader of its files, the one
// to answer: settings given as `git -c` (GIT_CONFIG_PARAMETERS, whose
// quoting is git's) or that change how discovery goes, and settings from
// GIT_CONFIG_COUNT that FromCount cannot read as git would or that bear
// on finding the repository.
func Overridden(env Lookup) bool {
	for _, name := range []string{"GIT_CONFIG_PARAMETERS", "GIT_CONFIG", "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM"} {
		if _, ok := env(name); ok {
			return true
		}
	}
	entries, ok := FromCount(env)
	if !ok {
		return true
	}
	for _, e := range entries {
		switch {
		case Includes(e), strings.HasPrefix(e.Key, "extensions."), strings.HasPrefix(e.Key, "safe."),
			e.Key == "core.bare", e.Key == "core.worktree", e.Key == "core.repositoryformatversion":
			return true
		}
	}
	return false
}

// Scopes lists a repository's configuration in every scope as `git
// config --includes --list` would (system, global, its own local, the
// command line's), for git the program prog run with env; ok is false
// when only git knows.
func Scopes(env Lookup, prog string, local []Entry) ([]Entry, bool) {
	if local == nil || Overridden(env) {
		return nil, false
	}
	var files []string
	if system, ok := systemFileIn(env, prog); !ok {
		return nil, false
	} else if system != "" {
		files = append(files, system)
	}
	files = append(files, GlobalFiles(env)...)
	all, ok := ReadFiles(files)
	if !ok {
		return nil, false
	}
	cmdline, ok := FromCount(env)
	if !ok {
		return nil, false
	}
	all = append(all, local...)
	return append(all, cmdline...), true
}

// systemFileIn is the system-wide config file git reads: none under
// GIT_CONFIG_NOSYSTEM, GIT_CONFIG_SYSTEM when set, else the one its build
// names (SystemFile), prog found on env's PATH. ok is false where only
// git knows.
func systemFileIn(env Lookup, prog string) (path string, ok bool) {
	if v, set := env("GIT_CONFIG_NOSYSTEM"); set {
		if on, known := Bool(v); !known {
			return "", false
		} else if on {
			return "", true
		}
	}
	if v, set := env("GIT_CONFIG_SYSTEM"); set {
		return v, v != ""
	}
	if !filepath.IsAbs(prog) {
		var found bool
		if prog, found = lookPath(env, prog); !found {
			return "", false
		}
	}
	return SystemFile(prog)
}

// lookPath finds prog on env's PATH, its absolute folders only.
func lookPath(env Lookup, prog string) (string, bool) {
	path, _ := env("PATH")
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, prog)
		if info, err := os.Stat(p); err == nil && !info.IsDir() && info.Mode()&0o111 != 0 {
			return p, true
		}
	}
	return "", false
}
