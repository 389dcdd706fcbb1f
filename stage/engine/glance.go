package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/record"
)

// Glance is what a place's worktree holds beyond its record, as the
// seeds' flow_stage status shows a worker: the files left uncommitted and
// the newest commits on its branch since its base. explain shows it, and
// a commissioner sees its child's in wait and in its own explain.
type Glance struct {
	// Dirty are the first uncommitted paths (git status), DirtyMore how
	// many more there are.
	Dirty     []string `json:"dirty"`
	DirtyMore int      `json:"dirtyMore,omitempty"`
	// Commits are the newest commits since the base, "abbrev subject".
	Commits []string `json:"commits"`
}

// glanceDirty and glanceCommits bound a glance.
const glanceDirty, glanceCommits = 10, 3

// GlanceAt reads place p's glance: only a place of this host whose
// worktree is where it belongs (stage.CheckHome) is read; nil otherwise.
func GlanceAt(ctx context.Context, env *stage.Env, repo *git.Repo, p *record.Place) *Glance {
	if stage.CheckHome(ctx, env, repo, p) != nil {
		return nil
	}
	// Two git processes side by side: the branch's commits are read while
	// the work tree's status runs.
	var commits []string
	var cerr error
	var wg sync.WaitGroup
	wg.Go(func() { commits, cerr = repo.Subjects(ctx, p.Base, "refs/heads/"+p.Branch, glanceCommits) })
	dirty, err := repo.Dirty(ctx, p.Path)
	wg.Wait()
	if err != nil || cerr != nil {
		return nil
	}
	g := &Glance{Dirty: dirty[:min(len(dirty), glanceDirty)], DirtyMore: max(0, len(dirty)-glanceDirty), Commits: commits}
	if g.Commits == nil {
		g.Commits = []string{}
	}
	return g
}

// Text is the glance on one line.
func (g *Glance) Text() string {
	dirty := "nothing uncommitted"
	if len(g.Dirty) > 0 {
		dirty = "uncommitted: " + strings.Join(g.Dirty, ", ")
		if g.DirtyMore > 0 {
			dirty += fmt.Sprintf(" +%d more", g.DirtyMore)
		}
	}
	commits := "no commit since its base"
	if len(g.Commits) > 0 {
		commits = "last commits: " + strings.Join(g.Commits, " | ")
	}
	return dirty + "; " + commits
}
