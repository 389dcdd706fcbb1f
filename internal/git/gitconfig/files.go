package gitconfig

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// PlainGitDir reads a repository folder's own config and reports whether
// the repository is plain: not a linked worktree's folder, format version
// 0 or 1 with no extension, not bare, no other work tree, no include.
func PlainGitDir(gitDir string) ([]Entry, bool) {
	if _, err := os.Lstat(filepath.Join(gitDir, "commondir")); err == nil {
		return nil, false
	}
	data, err := os.ReadFile(filepath.Join(gitDir, "config"))
	if err != nil {
		return nil, false
	}
	entries, ok := Parse(data)
	if !ok {
		return nil, false
	}
	for _, e := range entries {
		switch {
		case strings.HasPrefix(e.Key, "extensions."), Includes(e):
			return nil, false
		case e.Key == "core.bare" && e.Value != "false",
			e.Key == "core.worktree",
			e.Key == "core.repositoryformatversion" && e.Value != "0" && e.Value != "1":
			return nil, false
		}
	}
	return entries, true
}

// Includes reports an include or includeIf entry, which makes git read
// another file.
func Includes(e Entry) bool {
	return strings.HasPrefix(e.Key, "include.") || strings.HasPrefix(e.Key, "includeif.")
}

// ReadFiles lists the entries of config files in order, a file that does
// not exist read as empty; ok is false when git must read them (a file it
// cannot read, one Parse gives up on, an include).
func ReadFiles(paths []string) (all []Entry, ok bool) {
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, false // git says what it could not read
		}
		entries, ok := Parse(data)
		if !ok {
			return nil, false
		}
		for _, e := range entries {
			if Includes(e) {
				return nil, false
			}
		}
		all = append(all, entries...)
	}
	return all, true
}

// GlobalFiles are the user's config files in git's order, env looking up
// the environment git runs with:
// GIT_CONFIG_GLOBAL alone when set, else the XDG file, then ~/.gitconfig.
func GlobalFiles(env func(name string) (string, bool)) []string {
	if v, set := env("GIT_CONFIG_GLOBAL"); set {
		if v == "" {
			return nil
		}
		return []string{v}
	}
	home, _ := env("HOME")
	var files []string
	if xdg, _ := env("XDG_CONFIG_HOME"); xdg != "" {
		files = append(files, filepath.Join(xdg, "git", "config"))
	} else if home != "" {
		files = append(files, filepath.Join(home, ".config", "git", "config"))
	}
	if home != "" {
		files = append(files, filepath.Join(home, ".gitconfig"))
	}
	return files
}

// distributionGits are where a Linux distribution's git package puts the
// git program: on PATH, and in its exec path (Debian's, and Fedora's,
// Arch's and Alpine's), which git puts first on PATH for the commands it
// runs, `git flume` among them. Each is built with prefix /usr, for which
// git's Makefile puts the system config in /etc.
var distributionGits = []string{"/usr/bin/git", "/usr/lib/git-core/git", "/usr/libexec/git-core/git"}

// SystemFile is the system-wide config file the git program at prog reads
// when the environment leaves it to git's build: /etc/gitconfig for a
// Linux distribution's git (distributionGits). Any other git was built
// with a location only it knows: ok is false.
func SystemFile(prog string) (path string, ok bool) {
	real, err := filepath.EvalSymlinks(prog)
	if err != nil || runtime.GOOS != "linux" || !slices.Contains(distributionGits, real) {
		return "", false
	}
	return "/etc/gitconfig", true
}

// Bool reads a boolean as git's environment does; known is false for
// a word git would refuse.
func Bool(v string) (on, known bool) {
	switch strings.ToLower(v) {
	case "true", "yes", "on":
		return true, true
	case "false", "no", "off", "":
		return false, true
	}
	if n, err := strconv.Atoi(v); err == nil {
		return n != 0, true
	}
	return false, false
}

// GlobalValues are key's values as `git config --global --get-all` prints
// them, empty ones left out; ok is false when git must read the file
// (ReadFiles, or no HOME: git refuses). key is lowercase and has no
// subsection. Unlike git's reading of all its files, `git config
// --global` reads one: GIT_CONFIG_GLOBAL's, else ~/.gitconfig, or the
// XDG file when ~/.gitconfig is not there.
func GlobalValues(env func(name string) (string, bool), key string) (values []string, ok bool) {
	files := GlobalFiles(env)
	if _, set := env("GIT_CONFIG_GLOBAL"); !set {
		if home, _ := env("HOME"); home == "" || len(files) != 2 {
			return nil, false
		}
		if exists(files[1]) || !exists(files[0]) {
			files = files[1:]
		} else {
			files = files[:1]
		}
	}
	entries, ok := ReadFiles(files)
	if !ok {
		return nil, false
	}
	for _, e := range entries {
		if e.Key == key && e.Value != "" {
			values = append(values, e.Value)
		}
	}
	return values, true
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
