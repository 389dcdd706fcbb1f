package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/git-flume/git-flume/internal/git/ondisk"
)

// A step flume runs in a worktree whose code an agent wrote runs that
// code: a lander's check on a candidate (Q13), a readying step in a place
// started from an agent's commit (A13). So it runs inside the same
// boundary as an agent: it writes the worktree (and git's folder for
// it), a temp folder of its own and the caches its section declares; not
// the person's home, the main checkout, the repository's refs or objects,
// nor anything else.

// ForStep is what a step in worktree dir of the repository whose common
// folder is commonDir runs behind, entered by flume's own program exe (""
// when flume runs without a sandbox): the note its record keeps (the
// layers, or "off: " and why there are none) and the start of its command
// line (nil: none). env is the step's own environment; a cache under ~/
// is in its HOME.
func ForStep(exe, commonDir, dir string, caches, env []string) (string, []string, error) {
	if exe == "" {
		return "off: flume runs without a sandbox here (FLUME_SANDBOX=off)", nil, nil
	}
	if why := Unavailable(); why != "" {
		return "off: " + why, nil, nil
	}
	admin := ondisk.WorktreeAdmin(commonDir, dir)
	if admin == "" {
		return "", nil, fmt.Errorf("the worktree %s has no folder in git", dir)
	}
	sb := &Sandbox{Dirs: []string{dir, admin}}
	home := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	for _, c := range caches {
		path, err := CacheFolder(c, home, commonDir)
		if err != nil {
			return "", nil, err
		}
		sb.Dirs = append(sb.Dirs, path)
	}
	sb.AddCommon(env)
	return sb.Held(), sb.Wrap(exe), nil
}

// CacheFolder is a declared cache folder c ("[land] cache = …"), made
// when missing: ~/ is home. A folder that holds the home, the
// repository's git folder or its main checkout is refused: a step would
// write them all.
func CacheFolder(c, home, commonDir string) (string, error) {
	path := c
	if rest, ok := strings.CutPrefix(c, "~/"); ok {
		if home == "" {
			return "", fmt.Errorf("cache = %q: the steps have no home", c)
		}
		path = filepath.Join(home, rest)
	}
	path = filepath.Clean(path)
	for _, kept := range []string{home, commonDir, filepath.Dir(commonDir)} {
		if kept != "" && within(kept, path) {
			return "", fmt.Errorf("cache = %q holds %s, which a step never writes", c, kept)
		}
	}
	if err := os.MkdirAll(path, 0o755); err != nil {
		return "", fmt.Errorf("cache = %q: %w", c, err)
	}
	return path, nil
}

// within reports path p at or beneath folder dir.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
