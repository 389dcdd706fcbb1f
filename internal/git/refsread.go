package git

import "context"

// refValue reads one ref through the repository's storer: its id, ""
// when it does not exist. ok is false when git must answer.
func (repo *Repo) refValue(name string) (id string, ok bool) {
	ids, ok := repo.reads().References([]string{name})
	return ids[name], ok
}

// RefValues reads refs as RefValue reads each, the packed-refs file once
// for all of them: each name's id, "" for one that does not exist.
func (repo *Repo) RefValues(ctx context.Context, names []string) (map[string]string, error) {
	out := make(map[string]string, len(names))
	if ids, ok := repo.reads().References(names); ok {
		for _, n := range names {
			out[n] = ids[n]
		}
		return out, nil
	}
	for _, n := range names {
		id, err := repo.RefValue(ctx, n)
		if err != nil {
			return nil, err
		}
		out[n] = id
	}
	return out, nil
}

// HasCommit reports whether commit id is in this repository, read through
// its storer; false too where only git could tell (it starts no process).
func (repo *Repo) HasCommit(id string) bool { return repo.reads().HasCommit(id) }
