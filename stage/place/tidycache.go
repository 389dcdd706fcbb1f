package place

import (
	"context"

	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/engine"
	"github.com/git-flume/git-flume/stage/record"
)

// judge is ps's judgement of place p's branch (T4), from the cache when
// its head and target stand where they stood when it was judged
// unlanded. A judgement is kept only when the target did not move while
// it was made.
func (ps *Places) judge(ctx context.Context, c *stage.UnlandedCache, p *record.Place) (engine.LandingJudgement, error) {
	repo := ps.r.Git
	if c == nil || repo == nil {
		return ps.wt.JudgeLanding(ctx, p)
	}
	head, herr := repo.ResolveRef(ctx, p.BranchRef())
	target, terr := repo.ResolveRef(ctx, "refs/heads/"+p.Target)
	if herr == nil && terr == nil {
		if n, ok := c.Known(head, target); ok {
			return engine.LandingJudgement{Head: head, Unlanded: n}, nil
		}
	}
	j, err := ps.wt.JudgeLanding(ctx, p)
	if err == nil && herr == nil && terr == nil && j.Head == head && !j.Landed && !j.Unknown && j.Unlanded > 0 {
		if after, err := repo.ResolveRef(ctx, "refs/heads/"+p.Target); err == nil && after == target {
			c.Keep(head, target, j.Unlanded)
		}
	}
	return j, err
}
