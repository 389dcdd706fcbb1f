package land

import (
	"fmt"

	"github.com/git-flume/git-flume/agents/sandbox"
)

// checkBoundary is what checks in worktree dir run behind (Q13,
// sandbox.ForStep): the note the proof keeps and the start of each
// check's command line (nil: none). env is the checks' own environment;
// caches are the folders [land] cache lets them write.
func (l *Lander) checkBoundary(dir string, caches, env []string) (string, []string, error) {
	boundary, wrap, err := sandbox.ForStep(l.r.Env.Engine.Sandbox, l.r.Git.CommonDir, dir, caches, env)
	if err != nil {
		return "", nil, fmt.Errorf("[land] %w", err)
	}
	return boundary, wrap, nil
}
