package land

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/git-flume/git-flume/agents/sandbox"
	"github.com/git-flume/git-flume/internal/git/ondisk"
)

// A check runs the candidate's code: a branch an agent wrote may have
// changed the script a check names. So each check runs inside the same
// boundary as an agent (Q13, A13): it writes its worktree (and git's
// folder for it), a temp folder of its own and the caches [land]
// declares; not the person's home, the main checkout, the repository's
// refs or objects, nor anything else.

// checkBoundary is what checks in worktree dir run behind: the note the
// proof keeps (the layers, or "off: " and why there are none) and the
// start of each check's command line (nil: none). env is the checks'
// own environment.
func (l *Lander) checkBoundary(dir string, caches, env []string) (string, []string, error) {
	exe := l.r.Env.Engine.Sandbox
	if exe == "" {
		return "off: flume runs without a sandbox here (FLUME_SANDBOX=off)", nil, nil
	}
	if why := sandbox.Unavailable(); why != "" {
		return "off: " + why, nil, nil
	}
	commonDir := l.r.Git.CommonDir
	admin := ondisk.WorktreeAdmin(commonDir, dir)
	if admin == "" {
		return "", nil, fmt.Errorf("the check's worktree %s has no folder in git", dir)
	}
	sb := &sandbox.Sandbox{Dirs: []string{dir, admin}}
	home := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	for _, c := range caches {
		path, err := cacheFolder(c, home, commonDir)
		if err != nil {
			return "", nil, err
		}
		sb.Dirs = append(sb.Dirs, path)
	}
	sb.AddCommon(env)
	return sb.Held(), sb.Wrap(exe), nil
}

// cacheFolder is a [land] cache folder, made when missing: ~/ is the
// checks' home. A folder that holds the home, the repository's git
// folder or its main checkout is refused: a check would write them all.
func cacheFolder(c, home, commonDir string) (string, error) {
	path := c
	if rest, ok := strings.CutPrefix(c, "~/"); ok {
		if home == "" {
			return "", fmt.Errorf("[land] cache = %q: the checks have no home", c)
		}
		path = filepath.Join(home, rest)
	}
	path = filepath.Clean(path)
	for _, kept := range []string{home, commonDir, filepath.Dir(commonDir)} {
		if kept != "" && within(kept, path) {
			return "", fmt.Errorf("[land] cache = %q holds %s, which a check never writes", c, kept)
		}
	}
	if err := os.MkdirAll(path, 0o755); err != nil {
		return "", fmt.Errorf("[land] cache = %q: %w", c, err)
	}
	return path, nil
}

// within reports path p at or beneath folder dir.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
