package stage

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/refs"
)

// The conflict radar, first part (issue 30): which open places of this
// host would conflict with each other, or with their target's tip, if
// merged now, computed exactly by `git merge-tree --write-tree` from both
// heads (in memory: no work tree or index is touched), and cached by the
// commits it was computed from. And an order to land them in that lands
// the independent ones first.

// Conflict is a predicted conflict of a place: with another open place,
// or with its target's tip ("target <branch>").
type Conflict struct {
	Place string   `json:"place"`
	With  string   `json:"with"`
	Files []string `json:"files"`
	// Exact: computed from both heads by git merge-tree (this part of the
	// radar computes no other kind).
	Exact bool `json:"exact"`
}

// openPlace is an open place of this host as the radar reads it.
type openPlace struct {
	p        *Place
	head     string
	target   string // the target's tip
	toLand   int    // commits on its branch the target lacks
	finished bool   // its last stage delivered
}

// ReadConflicts computes the conflicts between this host's open places
// and between each and its target's tip. It writes nothing but its cache
// (and the merged trees' objects git writes).
func ReadConflicts(ctx context.Context, env *Env, repoDir string) ([]Conflict, error) {
	repo, store, err := env.open(ctx, repoDir)
	if err != nil {
		return nil, err
	}
	places, err := openPlaces(ctx, env, repo, store)
	if err != nil {
		return nil, err
	}
	return conflictsOf(ctx, repo, places)
}

// openPlaces are the made, not dropped places of this host whose branch
// and target exist, with their heads, their targets' tips, and what each
// has to land.
func openPlaces(ctx context.Context, env *Env, repo *git.Repo, store *refs.Store) ([]openPlace, error) {
	recs, _, err := store.List(ctx, PlacePrefix)
	if err != nil {
		return nil, err
	}
	out := localHeads(ctx, env, repo, recs)
	for i := range out {
		o := &out[i]
		if o.toLand, err = repo.CountBetween(ctx, o.target, o.head); err != nil {
			return nil, err
		}
		last := o.p.Stages[len(o.p.Stages)-1].State
		o.finished = o.p.Current >= len(o.p.Stages)-1 && (last == StateDelivered || last == StateLanded)
	}
	return out, nil
}

// localHeads are the made, not dropped places of this host among records
// whose branch and target exist, with their heads and targets' tips, by
// id: refs read in process, no git process.
func localHeads(ctx context.Context, env *Env, repo *git.Repo, records []*refs.Record) []openPlace {
	var out []openPlace
	for _, rec := range records {
		if !strings.HasPrefix(rec.Ref, PlacePrefix) {
			continue
		}
		p, err := decodePlace(rec)
		if err != nil || p.Phase != PhaseMade || p.Dropped != nil || p.Host != env.Host {
			continue
		}
		head, err := repo.RefValue(ctx, p.branchRef())
		if err != nil || head == "" {
			continue
		}
		target, err := repo.RefValue(ctx, "refs/heads/"+p.Target)
		if err != nil || target == "" {
			continue
		}
		out = append(out, openPlace{p: p, head: head, target: target})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].p.ID < out[j].p.ID })
	return out
}

// conflictsOf merges, in memory, each place with its target's tip and each
// pair of places with work to land, through the cache.
func conflictsOf(ctx context.Context, repo *git.Repo, places []openPlace) ([]Conflict, error) {
	cache := readMergeCache(repo)
	merge := func(a, b string) ([]string, error) {
		key := min(a, b) + ":" + max(a, b)
		if files, ok := cache.Pairs[key]; ok {
			return files, nil
		}
		files, err := repo.MergeConflicts(ctx, a, b)
		if err == nil {
			cache.Pairs[key], cache.dirty = files, true
		}
		return files, err
	}
	var out []Conflict
	for i, a := range places {
		if a.toLand == 0 {
			continue
		}
		files, err := merge(a.head, a.target)
		if err != nil {
			return nil, err
		}
		if len(files) > 0 {
			out = append(out, Conflict{Place: a.p.ID, With: "target " + a.p.Target, Files: files, Exact: true})
		}
		for _, b := range places[i+1:] {
			if b.toLand == 0 {
				continue
			}
			files, err := merge(a.head, b.head)
			if err != nil {
				return nil, err
			}
			if len(files) > 0 {
				out = append(out, Conflict{Place: a.p.ID, With: b.p.ID, Files: files, Exact: true},
					Conflict{Place: b.p.ID, With: a.p.ID, Files: files, Exact: true})
			}
		}
	}
	cache.write(repo)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Place < out[j].Place })
	return out, nil
}

// mergeCache keeps merge-tree's answers by the two commits they came from
// (an answer never changes for the same commits), in the repository's
// flume folder. Losing it costs only the merges again.
type mergeCache struct {
	Pairs map[string][]string `json:"pairs"`
	// Told are the conflicts the notifier was told of, by "place|with",
	// until the pair merges cleanly again.
	Told  map[string]bool `json:"told,omitempty"`
	dirty bool
}

func mergeCachePath(repo *git.Repo) string {
	return filepath.Join(repo.CommonDir, "flume", "cache", "merges.json")
}

// hasMergeCache reports whether the radar ever wrote its cache here.
func hasMergeCache(repo *git.Repo) bool {
	_, err := os.Stat(mergeCachePath(repo))
	return err == nil
}

func readMergeCache(repo *git.Repo) *mergeCache {
	c := &mergeCache{}
	if data, err := os.ReadFile(mergeCachePath(repo)); err != nil || json.Unmarshal(data, c) != nil {
		c = &mergeCache{}
	}
	if c.Pairs == nil {
		c.Pairs = map[string][]string{}
	}
	if c.Told == nil {
		c.Told = map[string]bool{}
	}
	return c
}

func (c *mergeCache) write(repo *git.Repo) {
	if !c.dirty {
		return
	}
	data, err := json.Marshal(c)
	if err != nil || os.MkdirAll(filepath.Dir(mergeCachePath(repo)), 0o755) != nil {
		return
	}
	_ = replaceFile(mergeCachePath(repo), data, 0o644) // a cache not written is computed again
}

// LandStep is one step of a landing order: the place, whether it is
// finished (its last stage delivered), and why it lands there.
type LandStep struct {
	Place    string `json:"place"`
	Finished bool   `json:"finished"`
	Why      string `json:"why"`
}

// LandOrder orders this host's open places with work to land so that the
// independent ones land first: at each step, the place that conflicts
// with its target and with the fewest of the places still to land, the
// finished before the unfinished, the smaller overlaps before the larger;
// each step says what it conflicts with, and which of the rest need
// their branch brought up to date after it lands.
func LandOrder(ctx context.Context, env *Env, repoDir string) ([]LandStep, error) {
	repo, store, err := env.open(ctx, repoDir)
	if err != nil {
		return nil, err
	}
	places, err := openPlaces(ctx, env, repo, store)
	if err != nil {
		return nil, err
	}
	conflicts, err := conflictsOf(ctx, repo, places)
	if err != nil {
		return nil, err
	}
	return landOrder(places, conflicts), nil
}

// landOrder is LandOrder's decision, pure.
func landOrder(places []openPlace, conflicts []Conflict) []LandStep {
	with := map[string]map[string][]string{}
	for _, c := range conflicts {
		if with[c.Place] == nil {
			with[c.Place] = map[string][]string{}
		}
		with[c.Place][c.With] = c.Files
	}
	left := map[string]openPlace{}
	for _, o := range places {
		if o.toLand > 0 {
			left[o.p.ID] = o
		}
	}
	var steps []LandStep
	for len(left) > 0 {
		type cand struct {
			id                   string
			target, others, size int
			finished             bool
		}
		var cands []cand
		for id, o := range left {
			c := cand{id: id, finished: o.finished}
			for other, files := range with[id] {
				if strings.HasPrefix(other, "target ") {
					c.target = 1
				} else if _, ok := left[other]; ok {
					c.others++
					c.size += len(files)
				}
			}
			cands = append(cands, c)
		}
		sort.Slice(cands, func(i, j int) bool {
			a, b := cands[i], cands[j]
			switch {
			case a.target != b.target:
				return a.target < b.target
			case a.finished != b.finished:
				return a.finished
			case a.others != b.others:
				return a.others < b.others
			case a.size != b.size:
				return a.size < b.size
			}
			return a.id < b.id
		})
		next := cands[0]
		steps = append(steps, LandStep{Place: next.id, Finished: next.finished, Why: landWhy(next.id, with[next.id], left)})
		delete(left, next.id)
	}
	return steps
}

// landWhy says why a place lands where it does.
func landWhy(id string, with map[string][]string, left map[string]openPlace) string {
	var parts, after []string
	for other, files := range with {
		if strings.HasPrefix(other, "target ") {
			parts = append(parts, fmt.Sprintf("conflicts with its %s in %s: bring its branch up to date first", other, strings.Join(files, ", ")))
		} else if _, ok := left[other]; ok && other != id {
			after = append(after, fmt.Sprintf("%s (%s)", other, strings.Join(files, ", ")))
		}
	}
	slices.Sort(after)
	if len(after) > 0 {
		parts = append(parts, "conflicts with "+strings.Join(after, "; ")+": each of those brings its branch up to date after this lands")
	}
	if len(parts) == 0 {
		return "independent: conflicts with nothing still to land"
	}
	return strings.Join(parts, "; ")
}

// knownConflicts annotates this host's open places in st with the
// conflicts the radar's cache already holds for their heads as they are
// now (and their targets' tips): exact answers for these very commits,
// read without starting a process. records are every place record read,
// so a place shown alone is still paired with the others. A pair not
// computed yet is not shown: `git flume conflicts` computes every pair,
// and a place's commit computes its own (RefreshConflicts).
func knownConflicts(env *Env, repo *git.Repo, records []*refs.Record, st *Status) {
	if len(st.Places) == 0 {
		return
	}
	cache := readMergeCache(repo)
	if len(cache.Pairs) == 0 {
		return
	}
	open := localHeads(context.Background(), env, repo, records)
	lookup := func(a, b string) []string { return cache.Pairs[min(a, b)+":"+max(a, b)] }
	for i := range st.Places {
		ps := &st.Places[i]
		k := slices.IndexFunc(open, func(o openPlace) bool { return o.p.ID == ps.Place })
		if k < 0 {
			continue
		}
		a := open[k]
		if files := lookup(a.head, a.target); len(files) > 0 {
			ps.Conflicts = append(ps.Conflicts, Conflict{Place: a.p.ID, With: "target " + a.p.Target, Files: files, Exact: true})
		}
		for _, b := range open {
			if b.p.ID != a.p.ID && a.head != b.head {
				if files := lookup(a.head, b.head); len(files) > 0 {
					ps.Conflicts = append(ps.Conflicts, Conflict{Place: a.p.ID, With: b.p.ID, Files: files, Exact: true})
				}
			}
		}
	}
}

// RefreshConflicts computes, after a commit in place id, its conflicts with
// its target's tip and with the other open places of this host into the
// radar's cache, and tells the notifier of each conflict that is new: one
// not told of since the pair last merged cleanly.
func RefreshConflicts(ctx context.Context, env *Env, repoDir, id string) error {
	repo, store, err := env.open(ctx, repoDir)
	if err != nil {
		return err
	}
	places, err := openPlaces(ctx, env, repo, store)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(places, func(o openPlace) bool { return o.p.ID == id })
	if i < 0 || places[i].toLand == 0 {
		return nil
	}
	all, err := conflictsOf(ctx, repo, places)
	if err != nil {
		return err
	}
	cache := readMergeCache(repo)
	now := map[string]Conflict{}
	for _, c := range all {
		if c.Place == id {
			now[c.Place+"|"+c.With] = c
		}
	}
	for key := range cache.Told {
		if strings.HasPrefix(key, id+"|") && now[key].Place == "" {
			delete(cache.Told, key) // merges cleanly again: a later conflict is new
			cache.dirty = true
		}
	}
	for key, c := range now {
		if !cache.Told[key] {
			notifyConflict(ctx, env, repo, places[i].p, c)
			cache.Told[key], cache.dirty = true, true
		}
	}
	cache.write(repo)
	return nil
}

// placeConflicts are the conflicts the radar's cache knows for place p's
// head as it is (as status shows them), none when it never ran here.
func placeConflicts(ctx context.Context, env *Env, repo *git.Repo, store *refs.Store, p *Place) []Conflict {
	if !hasMergeCache(repo) {
		return nil
	}
	records, _, err := store.List(ctx, PlacePrefix)
	if err != nil {
		return nil
	}
	st := &Status{Places: []PlaceStatus{{Place: p.ID}}}
	knownConflicts(env, repo, records, st)
	return st.Places[0].Conflicts
}
