package git

import (
	"context"
	"slices"
	"strings"

	"github.com/git-flume/git-flume/internal/git/ondisk"
	"github.com/git-flume/git-flume/internal/par"
)

// Reading refs and objects in process (R2, R4). A status of ten places
// spent most of its time starting `for-each-ref` and `cat-file`; the files
// they read are git's own and are replaced by rename, never rewritten in
// place, so a read sees one whole version of each. Whatever is not plainly
// the files backend of a SHA-1 repository (a reftable, a symbolic or broken
// loose ref, a glob pattern, a packed-refs line we do not know, an object
// ondisk cannot read) sends the whole read back to git, which then decides
// exactly as it always did.

// listRefsInProcess lists the refs under the patterns as ListRefs does.
// ok is false when git must answer instead.
//
// Loose refs are read before packed-refs, the order git's own iterator
// keeps (refs/files-backend.c): a ref `git pack-refs` moves while we read
// was loose when its folder was listed, so it is either still loose or
// already in the packed-refs file read after.
func (repo *Repo) listRefsInProcess(patterns []string) (refs []Ref, ok bool) {
	if !repo.inProcess() || repo.reftable() {
		return nil, false
	}
	for _, p := range patterns {
		if !strings.HasPrefix(p, "refs/") || strings.ContainsAny(p, "*?[\\") {
			return nil, false
		}
	}
	ids := map[string]string{}
	for _, p := range patterns {
		if !ondisk.LooseRefs(repo.CommonDir, strings.TrimSuffix(p, "/"), ids) {
			return nil, false
		}
	}
	if !ondisk.PackedRefs(repo.CommonDir, func(name string) bool { return ondisk.MatchesAny(name, patterns) }, ids) {
		return nil, false
	}
	refs = make([]Ref, 0, len(ids))
	for name, id := range ids {
		refs = append(refs, Ref{Name: name, ID: id})
	}
	slices.SortFunc(refs, func(a, b Ref) int { return strings.Compare(a.Name, b.Name) })
	ok = par.Each(len(refs), func(i int) bool {
		if refs[i].ID == "" {
			refs[i].Type = TypeBroken
			return true
		}
		typ, _, err := repo.readObject(refs[i].ID, true)
		refs[i].Type = typ
		return err == nil
	})
	return refs, ok
}

// refInProcess reads one ref as listRefsInProcess reads many: its id, ""
// when it does not exist. ok is false when git must answer.
func (repo *Repo) refInProcess(name string) (id string, ok bool) {
	ids, ok := repo.refsInProcess([]string{name})
	return ids[name], ok
}

// RefValues reads refs as RefValue reads each, the packed-refs file once
// for all of them: each name's id, "" for one that does not exist.
func (repo *Repo) RefValues(ctx context.Context, names []string) (map[string]string, error) {
	out := make(map[string]string, len(names))
	if ids, ok := repo.refsInProcess(names); ok {
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

// refsInProcess reads refs as refInProcess reads one. ok is false when
// git must answer.
func (repo *Repo) refsInProcess(names []string) (map[string]string, bool) {
	if !repo.inProcess() || repo.reftable() {
		return nil, false
	}
	ids := map[string]string{}
	want := make(map[string]bool, len(names))
	for _, n := range names {
		if want[n] {
			continue // many places name one target
		}
		want[n] = true
		if !strings.HasPrefix(n, "refs/") || !ondisk.LooseRefs(repo.CommonDir, n, ids) {
			return nil, false
		}
	}
	return ids, repo.objects.packedRefs.Lookup(repo.CommonDir, want, ids)
}

// filesAtInProcess reads the top-level file of each commit as
// Batch.ReadMany reads "<commit>:<file>". ok is false when git must
// answer instead.
func (repo *Repo) filesAtInProcess(commits []string, file string) (objs []Object, ok bool) {
	if !repo.inProcess() {
		return nil, false
	}
	objs = make([]Object, len(commits))
	ok = par.Each(len(commits), func(n int) bool {
		return repo.fileAt(commits[n], file, &objs[n])
	})
	return objs, ok
}

// fileAt reads the top-level file of one commit into obj, as
// filesAtInProcess does; false when git must answer.
func (repo *Repo) fileAt(id, file string, obj *Object) bool {
	tree, ok := repo.commitTree(id)
	if !ok {
		return false
	}
	typ, data, err := repo.readObject(tree, false)
	if err != nil || typ != "tree" {
		return false
	}
	mode, entry, err := ondisk.FindInTree(data, file)
	switch {
	case err != nil:
		return false
	case entry == "":
	case mode == "40000":
		*obj = Object{ID: entry, Type: "tree"}
	case mode == "160000":
		// A submodule's commit is not in this repository: cat-file
		// calls it missing.
	default:
		typ, data, err := repo.readObject(entry, false)
		if err != nil {
			return false
		}
		*obj = Object{ID: entry, Type: typ, Data: data}
	}
	return true
}

// HasCommit reports whether commit id is in this repository, read in
// process; false too where only git could tell (it starts no process).
func (repo *Repo) HasCommit(id string) bool {
	if !repo.inProcess() {
		return false
	}
	typ, _, err := repo.readObject(id, true)
	return err == nil && typ == "commit"
}

// commitTree returns the tree a commit names, read in process; false when
// git must answer.
func (repo *Repo) commitTree(id string) (string, bool) {
	return repo.objects.CommitTree(repo.CommonDir, id)
}

// blobAtInProcess is BlobAt read in process (path may name a file in a
// folder); false when git must answer.
func (repo *Repo) blobAtInProcess(commit, path string) (string, bool) {
	return repo.objects.BlobAt(repo.CommonDir, commit, path)
}

// readObject returns an object's type and, unless headerOnly, its
// content, read in process (objfile); an object in an alternate, or one
// objfile cannot read, is an error, and git's to read.
func (repo *Repo) readObject(id string, headerOnly bool) (typ string, data []byte, err error) {
	return repo.objects.Read(repo.CommonDir, id, headerOnly)
}
