package place

import (
	"context"

	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/engine"
	"github.com/git-flume/git-flume/stage/record"
)

// judge is ps's judgement of place p's branch (T4), with tidy's cache
// when there is one (engine.JudgeCached).
func (ps *Places) judge(ctx context.Context, c *stage.UnlandedCache, p *record.Place) (engine.LandingJudgement, error) {
	if c == nil || ps.r.Git == nil {
		return ps.wt.JudgeLanding(ctx, p)
	}
	return engine.JudgeCached(ctx, ps.r.Git, c, p, ps.wt.JudgeLanding)
}
