package radar

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/record"
)

// PlaceConflicts are the conflicts known for place p, as status shows
// them, read from the places that can conflict with it alone (issue 46:
// explain of one place reads a few records, not every one): the places
// the radar's cache pairs with p's tips, and the places of other hosts
// sync brought. A place of another host, or a clone whose indexes are
// not there, reads every place instead.
func PlaceConflicts(ctx context.Context, env *stage.Env, repo *git.Repo, store *refs.Store, p *record.Place) []record.Conflict {
	ids, ok := partners(repo, p.ID)
	foreign, fok := readForeign(repo)
	if p.Host != env.Host || !ok || !fok {
		recs, _, err := store.List(ctx, record.PlacePrefix)
		if err != nil {
			return nil
		}
		return KnownConflicts(env, repo, Views(record.DecodePlaces(recs)))[p.ID]
	}
	places := []Seen{View(p)}
	for _, id := range slices.Compact(slices.Sorted(slices.Values(append(ids, foreign...)))) {
		if id == p.ID {
			continue
		}
		if _, q, err := record.ReadPlace(ctx, store, id); err == nil {
			places = append(places, View(q))
		}
	}
	return KnownConflicts(env, repo, places)[p.ID]
}

// partners are the places the radar's cache pairs with a tip of place
// id: the places at the other tip of each conflicting pair (a superset:
// KnownConflicts judges them at their tips as they are). ok is false when
// the cache knows conflicts but not which places were at their tips.
func partners(repo *git.Repo, id string) (ids []string, ok bool) {
	known := readKnownConflicts(repo)
	if len(known) == 0 {
		return nil, true
	}
	tips, ok := readTipPlaces(repo)
	if !ok {
		return nil, false
	}
	for key := range known {
		a, b, _ := strings.Cut(key, ":")
		if slices.Contains(tips[a], id) {
			ids = append(ids, tips[b]...)
		}
		if slices.Contains(tips[b], id) {
			ids = append(ids, tips[a]...)
		}
	}
	return ids, true
}

func tipPlacesPath(repo *git.Repo) string {
	return filepath.Join(repo.CommonDir, "flume", "cache", "tips.json")
}

// readTipPlaces reads which places were at each tip of the cache's
// conflicting pairs when they were merged.
func readTipPlaces(repo *git.Repo) (map[string][]string, bool) {
	tips := map[string][]string{}
	data, err := os.ReadFile(tipPlacesPath(repo))
	return tips, err == nil && json.Unmarshal(data, &tips) == nil
}

func foreignPath(repo *git.Repo) string {
	return filepath.Join(repo.CommonDir, "flume", "cache", "foreign.json")
}

// readForeign reads the places sync brought from other hosts. ok is
// false when sync never wrote the list but could have brought some (the
// clone has tracking refs).
func readForeign(repo *git.Repo) ([]string, bool) {
	var ids []string
	data, err := os.ReadFile(foreignPath(repo))
	if err == nil {
		return ids, json.Unmarshal(data, &ids) == nil
	}
	synced, err := repo.ListRefs(context.Background(), refs.TrackedPrefix, refs.RemotePrefix)
	return nil, err == nil && len(synced) == 0
}

// NoteForeign keeps the list of places sync brought from other hosts
// (PlaceConflicts reads it): the last list with what this sync fetched
// added and what it removed taken out; without a list, every place
// record of another host, read once.
func NoteForeign(ctx context.Context, repo *git.Repo, store *refs.Store, host string, rep *refs.SyncReport) error {
	ids, ok := []string(nil), false
	if data, err := os.ReadFile(foreignPath(repo)); err == nil {
		ok = json.Unmarshal(data, &ids) == nil
	}
	if ok && len(rep.Fetched) == 0 && len(rep.Removed) == 0 {
		return nil
	}
	if !ok {
		// Without a list: the places this sync fetched are added below;
		// every other place record is read for its host. A fresh clone's
		// first sync reads none again (its receive read each record twice:
		// a third of its time over fetch at 1,000; issue 46).
		names, err := repo.ListRefs(ctx, record.PlacePrefix)
		if err != nil {
			return err
		}
		fetched := make(map[string]bool, len(rep.Fetched))
		for _, ref := range rep.Fetched {
			fetched[ref] = true
		}
		for _, r := range names {
			if fetched[r.Name] {
				continue
			}
			if rec, err := store.Read(ctx, r.Name); err == nil {
				if p, err := record.DecodePlace(rec); err == nil && p.Host != host {
					ids = append(ids, p.ID)
				}
			}
		}
	}
	for _, ref := range rep.Fetched {
		if id, ok := strings.CutPrefix(ref, record.PlacePrefix); ok {
			ids = append(ids, id)
		}
	}
	ids = slices.DeleteFunc(ids, func(id string) bool { return slices.Contains(rep.Removed, record.PlaceRef(id)) })
	data, err := json.Marshal(slices.Compact(slices.Sorted(slices.Values(ids))))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(foreignPath(repo)), 0o755); err != nil {
		return err
	}
	return stage.ReplaceFile(foreignPath(repo), data, 0o644)
}
