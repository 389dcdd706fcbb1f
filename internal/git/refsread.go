package git

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/git-flume/git-flume/internal/git/objfile"
	"github.com/git-flume/git-flume/internal/par"
)

// Reading refs and objects in process (R2, R4). A status of ten places
// spent most of its time starting `for-each-ref` and `cat-file`; the files
// they read are git's own and are replaced by rename, never rewritten in
// place, so a read sees one whole version of each. Whatever is not plainly
// the files backend of a SHA-1 repository (a reftable, a symbolic or broken
// loose ref, a glob pattern, a packed-refs line we do not know, an object
// go-git cannot read) sends the whole read back to git, which then decides
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
		if !repo.looseRefs(strings.TrimSuffix(p, "/"), ids) {
			return nil, false
		}
	}
	if !repo.packedRefs(patterns, ids) {
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
		if !strings.HasPrefix(n, "refs/") || !repo.looseRefs(n, ids) {
			return nil, false
		}
	}
	return ids, repo.packedRefsMatching(func(name string) bool { return want[name] }, ids)
}

// looseRefs adds the loose refs at or under name (a ref, or a folder of
// refs) to ids. It reports false for anything git would have to judge.
func (repo *Repo) looseRefs(name string, ids map[string]string) bool {
	path := filepath.Join(repo.CommonDir, filepath.FromSlash(name))
	info, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return true
	case err != nil:
		return false
	case info.Mode().IsRegular():
		return repo.looseRef(name, path, ids)
	case !info.IsDir():
		return false
	}
	entries, err := os.ReadDir(path)
	if errors.Is(err, fs.ErrNotExist) {
		return true // removed since the Lstat: git removes empty folders
	}
	if err != nil {
		return false
	}
	for _, e := range entries {
		child := name + "/" + e.Name()
		switch {
		case e.IsDir():
			if !repo.looseRefs(child, ids) {
				return false
			}
		case strings.HasSuffix(e.Name(), ".lock"):
			// A writer's lock, not a ref: git skips it too.
		case e.Type().IsRegular():
			if !repo.looseRef(child, filepath.Join(path, e.Name()), ids) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func (repo *Repo) looseRef(name, path string, ids map[string]string) bool {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return true // packed or deleted since the folder was listed
	}
	if err != nil || CheckRefName(name) != nil {
		return false
	}
	id := strings.TrimSuffix(string(data), "\n")
	switch {
	case strings.HasPrefix(id, "ref:"):
		return false // a symbolic ref: git follows it
	case !isAnyHash(id) || strings.ToLower(id) != id:
		// Broken (git skips it with a warning): listed with no id, so
		// its reader names it instead of never seeing it (R5).
		id = ""
	}
	if _, seen := ids[name]; !seen {
		ids[name] = id
	}
	return true
}

// packedRefs adds the refs of the packed-refs file that the patterns
// match and no loose ref shadows.
func (repo *Repo) packedRefs(patterns []string, ids map[string]string) bool {
	return repo.packedRefsMatching(func(name string) bool { return matchesAny(name, patterns) }, ids)
}

// packedRefsMatching adds the refs of the packed-refs file that match
// reports and no loose ref shadows.
func (repo *Repo) packedRefsMatching(match func(name string) bool, ids map[string]string) bool {
	f, err := os.Open(filepath.Join(repo.CommonDir, "packed-refs"))
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	if err != nil {
		return false
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	first := true
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return false
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return false
		}
		if len(line) > 0 {
			line = bytes.TrimSuffix(line, []byte("\n"))
			switch {
			case first && bytes.HasPrefix(line, []byte("# pack-refs with:")):
			case bytes.HasPrefix(line, []byte("^")):
				// The peeled value of the tag above: not asked for.
			default:
				id, name, found := strings.Cut(string(line), " ")
				if !found || !isAnyHash(id) {
					return false
				}
				if match(name) {
					if _, loose := ids[name]; !loose {
						ids[name] = id
					}
				}
			}
			first = false
		}
		if err != nil {
			return true
		}
	}
}

// matchesAny applies for-each-ref's rule for a pattern without glob
// characters: the ref itself, or a ref below it.
func matchesAny(name string, patterns []string) bool {
	for _, p := range patterns {
		if name == p || strings.HasPrefix(name, strings.TrimSuffix(p, "/")+"/") {
			return true
		}
	}
	return false
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
	mode, entry, err := objfile.FindInTree(data, file)
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

// isAnyHash reports a 40-digit hex id, in either case (a loose ref written
// in capitals is git's to judge: listed as broken by its caller).
func isAnyHash(s string) bool {
	if len(s) != 40 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}
