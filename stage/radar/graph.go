package radar

import (
	"context"
	"maps"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/internal/git/ondisk"
	"github.com/git-flume/git-flume/internal/par"
	"github.com/git-flume/git-flume/stage/record"
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
	// stamps are each place's work stamp when its snapshot was last
	// taken, as cached and as taken by this command.
	stamps, freshStamps map[string]workStamp
	// stamped are the work stamps taken ahead (prestamp), by place.
	stamped map[string]stamped
}

// stamped is a work tree's stamp as taken, or none (ok false).
type stamped struct {
	stamp string
	ok    bool
}

// prestamp takes the work stamps of places' work trees side by side
// (each a walk of its folders and files), ahead of take: a warm radar's
// time is theirs. A stamp taken before its snapshot only errs towards
// taking the snapshot again next time.
func (g *graph) prestamp(places []openPlace) {
	var ids, dirs []string
	for _, o := range places {
		if o.local {
			ids, dirs = append(ids, o.p.ID), append(dirs, o.full.Path)
		}
	}
	got := make([]stamped, len(ids))
	par.Each(len(ids), func(i int) bool {
		got[i].stamp, got[i].ok = ondisk.WorkStamp(dirs[i], g.repo.CommonDir)
		return true
	})
	g.stamped = make(map[string]stamped, len(ids))
	for i, id := range ids {
		g.stamped[id] = got[i]
	}
}

// stampOf is place id's work stamp, taken ahead or now.
func (g *graph) stampOf(id, dir string) (string, bool) {
	if s, ok := g.stamped[id]; ok {
		delete(g.stamped, id) // taken once: a second take reads it again
		return s.stamp, s.ok
	}
	return ondisk.WorkStamp(dir, g.repo.CommonDir)
}

// workStamp is what a place's work tree was (ondisk.WorkStamp) when its
// snapshot over head was taken.
type workStamp struct {
	Stamp    string `json:"stamp"`
	Head     string `json:"head"`
	Snapshot string `json:"snapshot,omitempty"`
}

// loadGraph reads the answers the radar's cache holds.
func loadGraph(repo *git.Repo) *graph {
	c := readMergeCache(repo)
	return &graph{repo: repo, known: c.Graph, fresh: map[string]graphAnswer{}, stamps: c.Stamps, freshStamps: map[string]workStamp{}}
}

// take is Take for place id, whose work tree is at dir ("" for none): a
// work tree whose stamp is the one its last snapshot was taken at, over the
// same head, has that snapshot still (while git keeps its commit, which no
// ref names), and git is not asked for it: a warm radar starts no process
// for a place (issue 46).
func (g *graph) take(ctx context.Context, id, dir, head, base string, last *record.Fingerprint) (*record.Fingerprint, error) {
	if dir == "" {
		return Take(ctx, g.repo, "", head, base, last)
	}
	stamp, ok := g.stampOf(id, dir)
	if was, hit := g.stamps[id]; ok && hit && was.Stamp == stamp && was.Head == head && (was.Snapshot == "" || g.repo.HasCommit(was.Snapshot)) {
		return takeAt(ctx, g.repo, head, base, was.Snapshot, last)
	}
	snapshot, err := snapshotOf(ctx, g.repo, dir, head)
	if err != nil {
		return nil, err
	}
	if ok {
		g.freshStamps[id] = workStamp{stamp, head, snapshot}
	}
	return takeAt(ctx, g.repo, head, base, snapshot, last)
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
	if len(g.fresh) == 0 && len(g.freshStamps) == 0 {
		return
	}
	editMergeCache(ctx, g.repo, func(c *mergeCache) bool {
		if c.Graph == nil || len(c.Graph)+len(g.fresh) > maxGraph {
			c.Graph = map[string]graphAnswer{}
		}
		maps.Copy(c.Graph, g.fresh)
		if c.Stamps == nil || len(c.Stamps)+len(g.freshStamps) > maxGraph {
			c.Stamps = map[string]workStamp{}
		}
		maps.Copy(c.Stamps, g.freshStamps)
		return true
	})
}
