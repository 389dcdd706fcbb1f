package place

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/git-flume/git-flume/stage/engine"
	"github.com/git-flume/git-flume/stage/record"
)

// unlandedCache is what tidy judged of branches whose work had not
// landed (T4), by branch head and target tip: commits never change, so a
// judgement holds while both stand, and a tidy run again over places
// whose branches and targets did not move starts no git process to judge
// them (5 to 8 a place otherwise; issue 46). Only "not landed" is kept:
// an entry wrong for any reason keeps a place longer, never removes one.
// Tidy writes it, under its lock, with the judgements of its own run.
type unlandedCache struct {
	path        string
	known, used map[string]int // "head target" → commits unlanded
}

func readUnlandedCache(commonDir string) *unlandedCache {
	c := &unlandedCache{path: filepath.Join(commonDir, "flume", "cache", "unlanded.json"), known: map[string]int{}, used: map[string]int{}}
	if data, err := os.ReadFile(c.path); err == nil {
		_ = json.Unmarshal(data, &c.known) // unreadable: nothing known
	}
	return c
}

// judge is ps's judgement of place p's branch (T4), from the cache when
// its head and target stand where they stood when it was judged
// unlanded.
func (ps *Places) judge(ctx context.Context, c *unlandedCache, p *record.Place) (engine.LandingJudgement, error) {
	repo := ps.r.Git
	if c == nil || repo == nil {
		return ps.wt.JudgeLanding(ctx, p)
	}
	head, herr := repo.ResolveRef(ctx, p.BranchRef())
	target, terr := repo.ResolveRef(ctx, "refs/heads/"+p.Target)
	key := head + " " + target
	if n, ok := c.known[key]; ok && herr == nil && terr == nil && n > 0 {
		c.used[key] = n
		return engine.LandingJudgement{Head: head, Unlanded: n}, nil
	}
	j, err := ps.wt.JudgeLanding(ctx, p)
	if err == nil && herr == nil && terr == nil && j.Head == head && !j.Landed && !j.Unknown && j.Unlanded > 0 {
		if after, err := repo.ResolveRef(ctx, "refs/heads/"+p.Target); err == nil && after == target {
			c.used[key] = j.Unlanded
		}
	}
	return j, err
}

// save keeps the judgements this tidy made or used, when they differ
// from what it read: best effort, a cache not written is judged again.
func (c *unlandedCache) save() {
	if len(c.used) == len(c.known) {
		same := true
		for k, n := range c.used {
			same = same && c.known[k] == n
		}
		if same {
			return
		}
	}
	data, err := json.Marshal(c.used)
	if err == nil && os.MkdirAll(filepath.Dir(c.path), 0o755) == nil {
		_ = engine.ReplaceFile(c.path, data, 0o644)
	}
}
