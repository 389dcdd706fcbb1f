package stage

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/git-flume/git-flume/internal/git"
)

// UnlandedCache is what tidy judged of branches whose work had not
// landed (T4), by branch head and target tip: commits never change, so a
// judgement holds while both stand, and a tidy run again over places
// whose branches and targets did not move starts no git process to judge
// them (5 to 8 a place otherwise; issue 46). Only "not landed" is kept:
// an entry wrong for any reason keeps a place longer, never removes one.
// Tidy writes it, under its lock, with the judgements of its own run.
type UnlandedCache struct {
	path        string
	known, used map[string]int    // "head target" → commits unlanded
	tips        map[string]string // ref → id as ReadTips read it
}

// ReadUnlandedCache reads the repository's cache; an unreadable one knows
// nothing.
func ReadUnlandedCache(commonDir string) *UnlandedCache {
	c := &UnlandedCache{path: filepath.Join(commonDir, "flume", "cache", "unlanded.json"), known: map[string]int{}, used: map[string]int{}}
	if data, err := os.ReadFile(c.path); err == nil {
		_ = json.Unmarshal(data, &c.known)
	}
	return c
}

// ReadTips reads refs (the places' branches and targets) once for the
// whole tidy, side by side: judging a place then reads no ref file
// (three reads a place were a fifth of a tidy at 1,000 places). An error
// leaves them unread, and each place is judged by reading its own.
func (c *UnlandedCache) ReadTips(ctx context.Context, repo *git.Repo, refs []string) {
	c.tips, _ = repo.RefValues(ctx, refs)
}

// Tip is ref's id as ReadTips read it, "" when absent or unread.
func (c *UnlandedCache) Tip(ref string) string { return c.tips[ref] }

// Known is how many commits of a branch at head were judged not on
// target at tip, when they were; a judgement used is kept.
func (c *UnlandedCache) Known(head, tip string) (int, bool) {
	key := head + " " + tip
	n, ok := c.known[key]
	if ok && n > 0 {
		c.used[key] = n
	}
	return n, ok && n > 0
}

// Keep keeps the judgement that n commits of a branch at head are not on
// target at tip.
func (c *UnlandedCache) Keep(head, tip string, n int) { c.used[head+" "+tip] = n }

// Save keeps the judgements this tidy made or used, when they differ
// from what it read: best effort, a cache not written is judged again.
func (c *UnlandedCache) Save() {
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
		_ = ReplaceFile(c.path, data, 0o644)
	}
}
