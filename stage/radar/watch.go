package radar

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/engine"
	"github.com/git-flume/git-flume/stage/record"
)

// radarWatch is what a place's watcher keeps for the conflict radar
// between its ticks. Each tick reads, without starting a
// process, the target's tip and the size of the agent's transcript; the
// radar runs when the target moved (a sibling landed), or when the agent
// worked on since the last run and RadarEvery has passed.
type Watch struct {
	target string
	size   int64
	last   time.Time
}

func (w *Watch) Tick(ctx context.Context, env *stage.Env, repo *git.Repo, repoDir string, p *record.Place) {
	target, err := repo.RefValue(ctx, "refs/heads/"+p.Target)
	if err != nil || target == "" {
		return
	}
	var size int64
	if a := p.Stages[p.Current].Agent; a != nil && a.Transcript != "" {
		if fi, err := os.Stat(a.Transcript); err == nil {
			size = fi.Size()
		}
	}
	if w.target == "" {
		// First tick: the target counts as moved when it is not where
		// the place's fingerprint (or, with none, its launch) last saw
		// it, as it may have moved before this watcher started.
		w.target, w.size, w.last = p.Base, size, time.Now()
		if fp := p.Fingerprint; fp != nil {
			w.target = fp.Base
		}
	}
	moved := target != w.target
	worked := size != w.size && time.Since(w.last) >= env.Engine.RadarInterval()
	w.target = target
	if !moved && !worked {
		return
	}
	w.size, w.last = size, time.Now()
	conflicts, err := RefreshConflicts(ctx, env, repoDir, p.ID)
	if err != nil {
		fmt.Fprintf(env.Out, "conflicts of %s: %v\n", p.ID, err)
		return
	}
	for _, c := range conflicts {
		if strings.HasPrefix(c.With, "target ") {
			tellTargetConflict(ctx, env, repo, repoDir, p, c)
		}
	}
}

// tellTargetConflict tells place p's running agent, once, that its branch
// now conflicts with its target: through Tell, so only into the
// agent's ready composer and confirmed in its transcript. Told once until
// the pair merges cleanly again; an agent that is not up, or a tell that
// is refused, is tried again at the next run of the radar, and status's
// next step says what to do meanwhile.
func tellTargetConflict(ctx context.Context, env *stage.Env, repo *git.Repo, repoDir string, p *record.Place, c record.Conflict) {
	key := c.Place + "|" + c.With
	if readMergeCache(repo).Agents[key] {
		return
	}
	target := strings.TrimPrefix(c.With, "target ")
	text := fmt.Sprintf("flume: %s moved (other work landed) and your branch %s now conflicts with it in %s. "+
		"Bring your branch up to date (git merge %s), resolve the conflicts, and commit; then go on.",
		target, p.Branch, strings.Join(c.Files, ", "), target)
	r, err := env.OpenRepository(ctx, repoDir)
	if err == nil {
		err = engine.NewOperator(r).Tell(ctx, engine.TellOptions{PlaceOptions: stage.PlaceOptions{Repo: repoDir, Place: p.ID}, Text: text})
	}
	if err != nil {
		fmt.Fprintf(env.Out, "tell %s of its conflict with %s: %v\n", p.ID, target, err)
		return
	}
	editMergeCache(ctx, repo, func(c *mergeCache) bool {
		c.Agents[key] = true
		return true
	})
}
