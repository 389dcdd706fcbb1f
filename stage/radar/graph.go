package radar

import (
	"context"
	"maps"

	"github.com/git-flume/git-flume/internal/git"
)

// graphAnswer is what the commit graph says of a place's head and its
// target's tip: their merge base, and how many commits the head has that
// the target lacks. It never changes for the same two commits.
type graphAnswer struct {
	Base  string `json:"base"`
	Ahead int    `json:"ahead"`
}

// maxGraph bounds the answers the radar's cache keeps: past it, only
// those of the command that writes it are kept.
const maxGraph = 20000

// graph answers the radar's questions of the commit graph from its cache,
// asking git (merge-base, rev-list --count) only of a pair of commits it
// has not seen: a warm radar starts no git process per place for them.
type graph struct {
	repo  *git.Repo
	known map[string]graphAnswer
	fresh map[string]graphAnswer
}

// loadGraph reads the answers the radar's cache holds.
func loadGraph(repo *git.Repo) *graph {
	return &graph{repo: repo, known: readMergeCache(repo).Graph, fresh: map[string]graphAnswer{}}
}

// answer is what the graph says of head and target's tip target.
func (g *graph) answer(ctx context.Context, head, target string) (graphAnswer, error) {
	key := head + " " + target
	if a, ok := g.fresh[key]; ok {
		return a, nil
	}
	if a, ok := g.known[key]; ok && git.IsObjectID(a.Base) && a.Ahead >= 0 {
		return a, nil
	}
	base, err := g.repo.MergeBase(ctx, head, target)
	if err != nil {
		return graphAnswer{}, err
	}
	ahead, err := g.repo.CountBetween(ctx, target, head)
	if err != nil {
		return graphAnswer{}, err
	}
	a := graphAnswer{Base: base, Ahead: ahead}
	g.fresh[key] = a
	return a, nil
}

// save adds the answers git gave this command to the radar's cache.
func (g *graph) save(ctx context.Context) {
	if len(g.fresh) == 0 {
		return
	}
	editMergeCache(ctx, g.repo, func(c *mergeCache) bool {
		if c.Graph == nil || len(c.Graph)+len(g.fresh) > maxGraph {
			c.Graph = map[string]graphAnswer{}
		}
		maps.Copy(c.Graph, g.fresh)
		return true
	})
}
