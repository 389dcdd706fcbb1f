package radar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	agent "github.com/git-flume/git-flume/agents"
	agentrun "github.com/git-flume/git-flume/agents/run"
	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/internal/lockfile"
	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/engine"
	"github.com/git-flume/git-flume/stage/record"
)

// The conflict radar: which open places would conflict with
// each other, or with their target's tip, if merged now. Between two
// places of this host, and a place and its target, git merge-tree answers
// exactly from both tips (in memory: no work tree or index is touched),
// cached by the commits it was computed from; a place's tip is its
// fingerprint's snapshot of uncommitted work when that was taken at its
// head. A place of another host is known only by the fingerprint its
// record carries (shared by sync): a pair with one is predicted from the
// fingerprints, not exact. And an order to land them in that lands the
// independent ones first.

// openPlace is an open place as the radar reads it.
type openPlace struct {
	p Seen
	// full is its whole record, where the radar's own commands read it
	// (withRecords); nil where a reader gave views alone (status).
	full *record.Place
	// local: this host's, its branch and target here; head and target
	// are their commits, tip what the radar merges.
	local             bool
	head, target, tip string
	// here: its tip's commit is in this repository, so merge-tree can
	// answer for it: every place of this host, and another host's whose
	// committed head was fetched (its branch pushed and fetched).
	here bool
	// fp is the place's fingerprint, when it validates.
	fp       *record.Fingerprint
	toLand   int  // commits on its branch the target lacks (local only)
	finished bool // its last stage delivered
}

// landing reports whether the place has work to land, as far as is known.
func (o openPlace) landing() bool {
	if o.local {
		return o.toLand > 0 || o.tip != o.head
	}
	return len(o.fp.Files) > 0
}

// ReadConflicts is the conflicts command: it brings the fingerprints of
// this host's open places up to date (their uncommitted work included),
// then computes every place's conflicts. It writes those records, the
// radar's cache and the objects git writes (merged trees, snapshots).
func ReadConflicts(ctx context.Context, env *stage.Env, repoDir string) ([]record.Conflict, error) {
	repo, store, err := env.Open(ctx, repoDir)
	if err != nil {
		return nil, err
	}
	if err := RefreshFingerprints(ctx, env, repoDir, true); err != nil {
		return nil, err
	}
	places, err := openPlaces(ctx, env, repo, store)
	if err != nil {
		return nil, err
	}
	return conflictsOf(ctx, repo, places, "")
}

// openPlaces are the open places among the repository's records, with
// what each of this host's has to land.
func openPlaces(ctx context.Context, env *stage.Env, repo *git.Repo, store *refs.Store) ([]openPlace, error) {
	recs, _, err := store.List(ctx, record.PlacePrefix)
	if err != nil {
		return nil, err
	}
	out := withRecords(ctx, env, repo, record.DecodePlaces(recs))
	g := loadGraph(repo)
	defer g.save(ctx)
	for i := range out {
		o := &out[i]
		if o.local {
			a, err := g.answer(ctx, o.head, o.target)
			if err != nil {
				return nil, err
			}
			o.toLand = a.Ahead
		}
		last := o.full.Stages[len(o.full.Stages)-1].State
		o.finished = o.full.Current >= len(o.full.Stages)-1 && (last == agentrun.StateDelivered || last == record.StateLanded)
	}
	return out, nil
}

// radarPlaces are the made, not dropped places among places: this host's
// whose branch and target exist, with their heads, targets' tips and tips
// (refs read in process, no git process), and other hosts' that carry a
// fingerprint that validates. By id.
func radarPlaces(ctx context.Context, env *stage.Env, repo *git.Repo, places []Seen) []openPlace {
	var names []string
	for _, p := range places {
		if p.Host == env.Host {
			names = append(names, p.branchRef(), "refs/heads/"+p.Target)
		}
	}
	tips, err := repo.RefValues(ctx, names) // the packed refs read once for all
	if err != nil {
		tips = map[string]string{}
	}
	var out []openPlace
	for _, p := range places {
		if p.Phase != record.PhaseMade || p.Dropped {
			continue
		}
		o := openPlace{p: p, local: p.Host == env.Host}
		if fp := p.Fingerprint; fp != nil && fp.Validate() == nil {
			o.fp = fp
		}
		if !o.local {
			if o.fp != nil {
				// its head, when fetched here and it had no
				// uncommitted work, is merged exactly like ours.
				if o.fp.Snapshot == "" && repo.HasCommit(o.fp.Head) {
					o.tip, o.here = o.fp.Head, true
				}
				out = append(out, o)
			}
			continue
		}
		o.head, o.target = tips[p.branchRef()], tips["refs/heads/"+p.Target]
		if o.head == "" || o.target == "" {
			continue
		}
		o.tip, o.here = o.head, true
		if o.fp != nil && o.fp.Head == o.head {
			o.tip = o.fp.Tip() // uncommitted work as last seen
		}
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].p.ID < out[j].p.ID })
	return out
}

// pairConflicts lists the conflicts of each place with work to land: with
// its target's tip and with each other such place, in pair order; with
// involve, only the pairs place involve is in. exact answers a pair of
// commits that are here (known false: not known, nothing shown); a pair
// with another host's place not here is answered by the fingerprints.
func pairConflicts(places []openPlace, involve string, exact func(a, b string) (files []string, known bool, err error)) ([]record.Conflict, error) {
	var out []record.Conflict
	for i, a := range places {
		if !a.landing() {
			continue
		}
		if a.local && (involve == "" || a.p.ID == involve) {
			files, _, err := exact(a.tip, a.target)
			if err != nil {
				return nil, err
			}
			if len(files) > 0 {
				out = append(out, record.Conflict{Place: a.p.ID, With: "target " + a.p.Target, Files: files, Exact: true})
			}
		}
		for _, b := range places[i+1:] {
			if !b.landing() || involve != "" && a.p.ID != involve && b.p.ID != involve {
				continue
			}
			var files []string
			isExact := a.here && b.here
			if isExact {
				var err error
				if files, _, err = exact(a.tip, b.tip); err != nil {
					return nil, err
				}
			} else {
				files = Overlap(a.fp, b.fp)
			}
			if len(files) > 0 {
				out = append(out, record.Conflict{Place: a.p.ID, With: b.p.ID, Files: files, Exact: isExact},
					record.Conflict{Place: b.p.ID, With: a.p.ID, Files: files, Exact: isExact})
			}
		}
	}
	return out, nil
}

// conflictsOf computes the places' conflicts (with involve, only place
// involve's), merging in memory through the cache. A run over every pair
// leaves the cache holding only the pairs of tips it was asked for; a run
// for one place adds its pairs to it.
func conflictsOf(ctx context.Context, repo *git.Repo, places []openPlace, involve string) ([]record.Conflict, error) {
	cache := readMergeCache(repo)
	used := map[string][]string{}
	out, err := pairConflicts(places, involve, func(a, b string) ([]string, bool, error) {
		if a == b {
			return nil, true, nil
		}
		key := min(a, b) + ":" + max(a, b)
		files, ok := used[key] // places at the same tips: merged once
		if !ok {
			files, ok = cache.Pairs[key]
		}
		if !ok {
			var err error
			if files, err = repo.MergeConflicts(ctx, a, b); err != nil {
				return nil, false, err
			}
		}
		used[key] = files
		return files, true, nil
	})
	if err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Place < out[j].Place })
	tips := tipPlaces(places, used)
	_, tipsKept := readTipPlaces(repo)
	switch {
	case involve == "" && (!maps.EqualFunc(used, cache.Pairs, slices.Equal) || !maps.EqualFunc(tips, cache.Tips, slices.Equal) || !tipsKept):
		// Pairs of tips no longer open go: the cache stays the size of
		// what is open.
		editMergeCache(ctx, repo, func(c *mergeCache) bool {
			c.Pairs, c.Tips = used, tips
			return true
		})
	case involve != "" && (!subset(used, cache.Pairs) || !tipsKept || !subset(tips, cache.Tips)):
		editMergeCache(ctx, repo, func(c *mergeCache) bool {
			changed := !tipsKept
			for key, files := range used {
				if _, ok := c.Pairs[key]; !ok {
					c.Pairs[key], changed = files, true
				}
			}
			for tip, ids := range tips {
				if merged := slices.Compact(slices.Sorted(slices.Values(append(c.Tips[tip], ids...)))); !slices.Equal(merged, c.Tips[tip]) {
					c.Tips[tip], changed = merged, true
				}
			}
			return changed
		})
	}
	return out, nil
}

// tipPlaces are the places at each tip of the conflicting pairs among
// used, by tip: what lets one place's conflicts be read from the cache
// without reading every place (PlaceConflicts).
func tipPlaces(places []openPlace, used map[string][]string) map[string][]string {
	conflicting := map[string]bool{}
	for key, files := range used {
		if a, b, ok := strings.Cut(key, ":"); ok && len(files) > 0 {
			conflicting[a], conflicting[b] = true, true
		}
	}
	tips := map[string][]string{}
	for _, o := range places {
		if o.here && conflicting[o.tip] {
			tips[o.tip] = append(tips[o.tip], o.p.ID)
		}
	}
	return tips
}

// subset reports whether every key of a is in b.
func subset(a, b map[string][]string) bool {
	for key := range a {
		if _, ok := b[key]; !ok {
			return false
		}
	}
	return true
}

// mergeCache keeps merge-tree's answers by the two commits they came from
// (an answer never changes for the same commits), in the repository's
// flume folder. Losing it costs only the merges again.
type mergeCache struct {
	Pairs map[string][]string `json:"pairs"`
	// Told are the conflicts the notifier was told of, by "place|with",
	// until the pair merges cleanly again.
	Told map[string]bool `json:"told,omitempty"`
	// Agents are the conflicts with their target a place's running agent
	// was told of (a tell confirmed in its transcript), by
	// "place|target <branch>", until the pair merges cleanly again.
	Agents map[string]bool `json:"agents,omitempty"`
	// Graph are the commit graph's answers for a place's head and its
	// target's tip, by "head target" (graph).
	Graph map[string]graphAnswer `json:"graph,omitempty"`
	// Tips are the places at each tip of a conflicting pair (tipPlaces).
	Tips map[string][]string `json:"tips,omitempty"`
	// Stamps are each place's work stamp at its last snapshot (graph.take).
	Stamps map[string]workStamp `json:"stamps,omitempty"`
}

func mergeCachePath(repo *git.Repo) string {
	return filepath.Join(repo.CommonDir, "flume", "cache", "merges.json")
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
	if c.Agents == nil {
		c.Agents = map[string]bool{}
	}
	if c.Tips == nil {
		c.Tips = map[string][]string{}
	}
	return c
}

func (c *mergeCache) write(repo *git.Repo) {
	data, err := json.Marshal(c)
	if err != nil {
		return
	}
	// What status reads is beside it: the conflicting pairs alone, a
	// small file whatever the number of clean pairs (n² of them).
	known := map[string][]string{}
	for key, files := range c.Pairs {
		if len(files) > 0 {
			known[key] = files
		}
	}
	if conflicting, err := json.Marshal(known); err == nil {
		_ = stage.ReplaceFile(knownConflictsPath(repo), conflicting, 0o644)
	}
	if tips, err := json.Marshal(c.Tips); err == nil && c.Tips != nil {
		_ = stage.ReplaceFile(tipPlacesPath(repo), tips, 0o644)
	}
	_ = stage.ReplaceFile(mergeCachePath(repo), data, 0o644) // a cache not written is computed again
	// After the graph: a paired file no older than it holds every answer
	// it has for the paired heads (readPairedAnswers).
	if paired, err := json.Marshal(pairedAnswers(c.Graph, known)); err == nil {
		_ = stage.ReplaceFile(pairedGraphPath(repo), paired, 0o644)
	}
}

func knownConflictsPath(repo *git.Repo) string {
	return filepath.Join(repo.CommonDir, "flume", "cache", "conflicts.json")
}

// readKnownConflicts reads the conflicting pairs of the radar's cache by
// their two tips; a pair not there merged cleanly or was never computed.
func readKnownConflicts(repo *git.Repo) map[string][]string {
	known := map[string][]string{}
	if data, err := os.ReadFile(knownConflictsPath(repo)); err == nil {
		_ = json.Unmarshal(data, &known) // unreadable: nothing known
	}
	return known
}

// editMergeCache changes the radar's cache under its lock: the hook's
// advance, a watcher and a command may each read, change and write it at
// once, and an answer or a "told" one of them wrote must not be lost to
// another's older copy (a conflict told twice). edit reports whether it
// changed anything. Without the lock (a folder not writable), nothing is
// written.
func editMergeCache(ctx context.Context, repo *git.Repo, edit func(c *mergeCache) bool) {
	if os.MkdirAll(filepath.Dir(mergeCachePath(repo)), 0o755) != nil {
		return
	}
	lock, err := lockfile.Take(ctx, mergeCachePath(repo)+".lock")
	if err != nil {
		return
	}
	defer lock.Unlock()
	c := readMergeCache(repo)
	if edit(c) {
		c.write(repo)
	}
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
func LandOrder(ctx context.Context, env *stage.Env, repoDir string) ([]LandStep, error) {
	repo, store, err := env.Open(ctx, repoDir)
	if err != nil {
		return nil, err
	}
	places, err := openPlaces(ctx, env, repo, store)
	if err != nil {
		return nil, err
	}
	conflicts, err := conflictsOf(ctx, repo, places, "")
	if err != nil {
		return nil, err
	}
	return landOrder(places, conflicts), nil
}

// landOrder is LandOrder's decision, pure.
func landOrder(places []openPlace, conflicts []record.Conflict) []LandStep {
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

// KnownConflicts are the conflicts of the places among places, by place,
// as far as known without starting a process: the radar's cached exact
// answers for this host's tips as they are now (a pair not computed yet
// is not shown: `git flume conflicts` computes every pair, a place's
// commit its own), and the fingerprints' predictions for pairs with
// another host's place. places are every place read, so a place shown
// alone is still paired with the others; of each it reads only what View
// keeps. Each place's list names its target first, then the others by
// name.
func KnownConflicts(env *stage.Env, repo *git.Repo, places []Seen) map[string][]record.Conflict {
	known := readKnownConflicts(repo)
	if len(known) == 0 && !slices.ContainsFunc(places, func(p Seen) bool { return p.Host != env.Host && p.Fingerprint != nil }) {
		// No conflicting pair known here and no other host's fingerprint
		// to judge: no conflict, and no place's tip to read (10,000
		// branches read for nothing cost status an eighth of its time).
		return map[string][]record.Conflict{}
	}
	open := radarPlaces(context.Background(), env, repo, places)
	markLanded(repo, open, known)
	byPlace := cachedConflicts(open, known)
	// Pairs with another host's place, from the fingerprints: each place
	// not here against every other (a pair of two such, once); a pair of
	// two places here the cache answers, exactly. The work grows with the
	// places times those not here, not with the square of the places.
	for i, a := range open {
		if a.here || !a.landing() {
			continue
		}
		for j, b := range open {
			if j == i || !b.here && j < i || !b.landing() {
				continue
			}
			if files := Overlap(a.fp, b.fp); len(files) > 0 {
				byPlace[a.p.ID] = append(byPlace[a.p.ID], record.Conflict{Place: a.p.ID, With: b.p.ID, Files: files})
				byPlace[b.p.ID] = append(byPlace[b.p.ID], record.Conflict{Place: b.p.ID, With: a.p.ID, Files: files})
			}
		}
	}
	for _, cs := range byPlace {
		slices.SortStableFunc(cs, func(x, y record.Conflict) int {
			xt, yt := strings.HasPrefix(x.With, "target "), strings.HasPrefix(y.With, "target ")
			if xt != yt {
				if xt {
					return -1
				}
				return 1
			}
			return strings.Compare(x.With, y.With)
		})
	}
	return byPlace
}

// Seen is what KnownConflicts reads of a place and nothing else, for a
// caller that holds every place until it pairs them (status: 10,000
// whole records held 17 MB, a record.Place of each 4 MB, these 1 MB).
type Seen struct {
	ID, Host, Branch, Target, Phase string
	Dropped                         bool
	Fingerprint                     *record.Fingerprint
}

func (s Seen) branchRef() string { return "refs/heads/" + s.Branch }

// View is what KnownConflicts reads of place p.
func View(p *record.Place) Seen {
	return Seen{ID: p.ID, Host: p.Host, Branch: p.Branch, Target: p.Target, Phase: p.Phase, Dropped: p.Dropped != nil, Fingerprint: p.Fingerprint}
}

// Views are the views of places, in their order.
func Views(places []*record.Place) []Seen {
	out := make([]Seen, len(places))
	for i, p := range places {
		out[i] = View(p)
	}
	return out
}

// withRecords are the open places among places (radarPlaces), each with
// its whole record: the radar's own commands fingerprint them.
func withRecords(ctx context.Context, env *stage.Env, repo *git.Repo, places []*record.Place) []openPlace {
	byID := make(map[string]*record.Place, len(places))
	for _, p := range places {
		byID[p.ID] = p
	}
	out := radarPlaces(ctx, env, repo, Views(places))
	for i := range out {
		out[i].full = byID[out[i].p.ID]
	}
	return out
}

// markLanded sets what each of this host's open places has to land, as
// far as status can tell without a git process: nothing when its head is
// its target's tip, or when the radar's graph answered so for that head
// and tip; else one (not counted: a pair with nothing to land merges
// cleanly anyway). A landed place's conflicts are over: it was shown
// conflicting until tidied, and so were places made after it (issue 47).
// The graph is read only for a place in a known conflict that is not its
// target's tip: the answers for such places first (pairedAnswers), every
// place's only when one is not there.
func markLanded(repo *git.Repo, open []openPlace, known map[string][]string) {
	inPair := map[string]bool{}
	for key := range known {
		a, b, _ := strings.Cut(key, ":")
		inPair[a], inPair[b] = true, true
	}
	var paired, graph map[string]graphAnswer
	whole := false
	for i := range open {
		o := &open[i]
		if !o.local {
			continue
		}
		o.toLand = 1
		switch {
		case o.tip != o.head: // uncommitted work lands once committed
		case o.head == o.target:
			o.toLand = 0
		case inPair[o.tip]:
			if paired == nil {
				paired, whole = readPairedAnswers(repo)
			}
			a, ok := paired[o.head+" "+o.target]
			if !ok && !whole && graph == nil {
				graph = readMergeCache(repo).Graph // every place's: 1.4 MB at 10,000
			}
			if !ok {
				a, ok = graph[o.head+" "+o.target]
			}
			if ok && git.IsObjectID(a.Base) && a.Ahead == 0 {
				o.toLand = 0
			}
		}
	}
}

// pairedAnswers are the graph's answers for the heads in the conflicting
// pairs known, kept beside the cache (paired.json) for markLanded: an
// answer never changes for its two commits, so one written by an older
// cache is still true.
func pairedAnswers(graph map[string]graphAnswer, known map[string][]string) map[string]graphAnswer {
	inPair := map[string]bool{}
	for key := range known {
		a, b, _ := strings.Cut(key, ":")
		inPair[a], inPair[b] = true, true
	}
	out := map[string]graphAnswer{}
	for key, a := range graph {
		if head, _, _ := strings.Cut(key, " "); inPair[head] {
			out[key] = a
		}
	}
	return out
}

func pairedGraphPath(repo *git.Repo) string {
	return filepath.Join(repo.CommonDir, "flume", "cache", "paired.json")
}

// readPairedAnswers reads what pairedAnswers kept; none when unreadable.
// whole says the file was written after the graph it came from: an
// answer it lacks for a paired head, the graph lacks too (after a landing
// moved the target, say), and is not looked for there.
func readPairedAnswers(repo *git.Repo) (answers map[string]graphAnswer, whole bool) {
	answers = map[string]graphAnswer{}
	data, err := os.ReadFile(pairedGraphPath(repo))
	if err != nil || json.Unmarshal(data, &answers) != nil {
		return answers, false
	}
	paired, perr := os.Stat(pairedGraphPath(repo))
	graph, gerr := os.Stat(mergeCachePath(repo))
	return answers, perr == nil && (errors.Is(gerr, fs.ErrNotExist) || gerr == nil && !paired.ModTime().Before(graph.ModTime()))
}

// cachedConflicts are the exact conflicts of this host's open places that
// the cache's conflicting pairs name, by place: each pair of tips is
// matched to the places at those tips (and a place's tip and its target's
// to its conflict with its target), so the work grows with the conflicts
// known, not with the square of the places.
func cachedConflicts(open []openPlace, known map[string][]string) map[string][]record.Conflict {
	byTip := map[string][]int{}
	for i, o := range open {
		if o.here && o.landing() {
			byTip[o.tip] = append(byTip[o.tip], i)
		}
	}
	out := map[string][]record.Conflict{}
	add := func(a, b string, files []string) {
		for _, i := range byTip[a] {
			x := open[i]
			if x.local && x.target == b {
				out[x.p.ID] = append(out[x.p.ID], record.Conflict{Place: x.p.ID, With: "target " + x.p.Target, Files: files, Exact: true})
			}
			for _, j := range byTip[b] {
				if y := open[j]; j != i {
					out[x.p.ID] = append(out[x.p.ID], record.Conflict{Place: x.p.ID, With: y.p.ID, Files: files, Exact: true})
				}
			}
		}
	}
	for key, files := range known {
		a, b, ok := strings.Cut(key, ":")
		if !ok || len(files) == 0 {
			continue
		}
		add(a, b, files)
		add(b, a, files)
	}
	return out
}

// CatchUpStep is the next step of a place that conflicts with its target
// and has no agent to tell; "" when it does not conflict.
func CatchUpStep(branch, path string, conflicts []record.Conflict) string {
	for _, c := range conflicts {
		if target, ok := strings.CutPrefix(c.With, "target "); ok {
			return fmt.Sprintf("bring %s up to date with %s (git -C %s merge %s) and resolve %s",
				branch, target, agent.ShellQuote(path), agent.ShellQuote(target), strings.Join(c.Files, ", "))
		}
	}
	return ""
}

// RefreshConflicts computes, after a commit in place id (or its target
// moved, or its agent worked on), its fingerprint and its conflicts with
// its target's tip and with the other open places into the radar's cache,
// and tells the notifier of each conflict that is new: one not told of
// since the pair last merged cleanly. It returns the place's conflicts.
func RefreshConflicts(ctx context.Context, env *stage.Env, repoDir, id string) ([]record.Conflict, error) {
	repo, store, err := env.Open(ctx, repoDir)
	if err != nil {
		return nil, err
	}
	if err := refreshPlaceFingerprint(ctx, env, repo, store, id); err != nil {
		return nil, err
	}
	places, err := openPlaces(ctx, env, repo, store)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(places, func(o openPlace) bool { return o.p.ID == id })
	if i < 0 || !places[i].local || !places[i].landing() {
		return nil, nil
	}
	all, err := conflictsOf(ctx, repo, places, id)
	if err != nil {
		return nil, err
	}
	now := map[string]record.Conflict{}
	var mine []record.Conflict
	for _, c := range all {
		if c.Place == id {
			now[c.Place+"|"+c.With] = c
			mine = append(mine, c)
		}
	}
	var tell []record.Conflict
	editMergeCache(ctx, repo, func(cache *mergeCache) bool {
		changed := false
		for _, told := range []map[string]bool{cache.Told, cache.Agents} {
			for key := range told {
				if strings.HasPrefix(key, id+"|") && now[key].Place == "" {
					delete(told, key) // merges cleanly again: a later conflict is new
					changed = true
				}
			}
		}
		for key, c := range now {
			if !cache.Told[key] {
				tell = append(tell, c)
				cache.Told[key], changed = true, true
			}
		}
		return changed
	})
	// Told outside the lock: a notifier may take its time.
	for _, c := range tell {
		notifyConflict(ctx, env, repo, places[i].full, c)
	}
	return mine, nil
}

// refreshFingerprints takes again the fingerprint of each of this host's
// open places whose head moved since its record's was taken (or since
// launch, with none), or, with all, of every one (uncommitted work may
// have moved under any).
func RefreshFingerprints(ctx context.Context, env *stage.Env, repoDir string, all bool) error {
	repo, store, err := env.Open(ctx, repoDir)
	if err != nil {
		return err
	}
	recs, _, err := store.List(ctx, record.PlacePrefix)
	if err != nil {
		return err
	}
	g := loadGraph(repo)
	defer g.save(ctx)
	places := withRecords(ctx, env, repo, record.DecodePlaces(recs))
	if all {
		g.prestamp(places)
	}
	for _, o := range places {
		if o.local {
			if err := refreshFingerprint(ctx, env, g, store, o.full, o.head, o.target, !all); err != nil {
				return fmt.Errorf("%s: fingerprint: %w", o.p.ID, err)
			}
		}
	}
	return nil
}

// refreshPlaceFingerprint takes place id's fingerprint at its branch's
// head and its target's tip as they are now.
func refreshPlaceFingerprint(ctx context.Context, env *stage.Env, repo *git.Repo, store *refs.Store, id string) error {
	_, p, err := record.ReadPlace(ctx, store, id)
	if err != nil {
		return err
	}
	tips, err := repo.RefValues(ctx, []string{p.BranchRef(), "refs/heads/" + p.Target})
	if err != nil {
		return err
	}
	g := loadGraph(repo)
	defer g.save(ctx)
	return refreshFingerprint(ctx, env, g, store, p, tips[p.BranchRef()], tips["refs/heads/"+p.Target], false)
}

// refreshFingerprint takes place p's fingerprint at its branch's head
// and its target's tip (its uncommitted work included, when its worktree
// is there) and writes it to its record when it changed; with staleOnly,
// only when its head moved since the record's was taken (or, with none,
// since launch): a sync with nothing moved reads nothing more than the
// records it was given. Another host's place, one not open, or one whose
// branch or target is gone ("" head or target) is left alone.
func refreshFingerprint(ctx context.Context, env *stage.Env, g *graph, store *refs.Store, p *record.Place, head, target string, staleOnly bool) error {
	if p.Host != env.Host || p.Phase != record.PhaseMade || p.Dropped != nil || head == "" || target == "" {
		return nil
	}
	id := p.ID
	if staleOnly {
		known := p.Base // no fingerprint yet: the head it was launched at
		if p.Fingerprint != nil {
			known = p.Fingerprint.Head
		}
		if head == known {
			return nil
		}
	}
	dir := p.Path
	if _, err := os.Stat(dir); err != nil {
		dir = "" // its worktree is gone: its commits only
	}
	a, err := g.answer(ctx, head, target)
	if err != nil {
		return err
	}
	fp, err := g.take(ctx, id, dir, head, a.Base, p.Fingerprint)
	if err != nil {
		return err
	}
	if Same(p.Fingerprint, fp) || (p.Fingerprint == nil && len(fp.Files) == 0 && fp.Snapshot == "") {
		return nil // nothing new, or nothing yet to tell of
	}
	_, err = record.EditPlace(ctx, store, id, func(p *record.Place) (string, error) {
		if err := stage.OwnedHere(env, p); err != nil {
			return "", err // R7
		}
		if Same(p.Fingerprint, fp) {
			return "", refs.ErrNoChange
		}
		p.Fingerprint = fp
		return "radar " + id + ": fingerprint", nil
	})
	if errors.Is(err, refs.ErrNoChange) {
		return nil
	}
	return err
}

// notifyConflict tells the notifier of a new conflict of place p (issue
// 30): event "conflict", with what it conflicts with and in which files.
func notifyConflict(ctx context.Context, env *stage.Env, repo *git.Repo, p *record.Place, c record.Conflict) {
	if p.Parent != nil {
		return // a delegated place answers to its commissioner, not a person
	}
	cfg, err := stage.LoadConfig(ctx, env.Runner, repo, p.ConfigRev(), env.UserConfig)
	if err != nil || cfg.Notify.Command == "" {
		return
	}
	ev := engine.Event{Schema: 1, Event: "conflict", Place: p.ID, Repo: p.Repo, Branch: p.Branch, At: env.NowUTC(),
		Message: fmt.Sprintf("%s now conflicts with %s in %s", p.ID, c.With, strings.Join(c.Files, ", ")),
		Reply:   "git flume land-order", Conflict: &c}
	ev.Message += "; see: " + ev.Reply
	engine.SendEvent(ctx, env, p, cfg, ev)
}
