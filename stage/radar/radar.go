package radar

import (
	"context"
	"slices"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/internal/git/patch"
	"github.com/git-flume/git-flume/stage/record"
)

// Same reports whether two fingerprints describe the same work.
func Same(a, b *record.Fingerprint) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Base == b.Base && a.Head == b.Head && a.Snapshot == b.Snapshot && a.Cut == b.Cut && slices.EqualFunc(a.Files, b.Files, func(x, y record.File) bool {
		return x.Path == y.Path && slices.Equal(x.Spans, y.Spans) && slices.Equal(x.Hunks, y.Hunks)
	})
}

// Take fingerprints the work of branch head over base (its merge base
// with its target): its commits, and, when dir is its work tree, its
// uncommitted work too (a snapshot through a throwaway index: HEAD, the
// branch and the real index are not touched; the snapshot's commit is
// written, no ref names it, and the same work makes the same commit
// again). The same base and tip as last's take last's files (a diff
// between the same two commits is the same diff), and a tip that is its
// base has none.
func Take(ctx context.Context, repo *git.Repo, dir, head, base string, last *record.Fingerprint) (*record.Fingerprint, error) {
	snapshot := ""
	if dir != "" {
		var err error
		if snapshot, err = snapshotOf(ctx, repo, dir, head); err != nil {
			return nil, err
		}
	}
	return takeAt(ctx, repo, head, base, snapshot, last)
}

// snapshotOf is the commit of the work tree at dir over head when it holds
// uncommitted work, "" when it is head's tree.
func snapshotOf(ctx context.Context, repo *git.Repo, dir, head string) (string, error) {
	tree, err := repo.SnapshotTree(ctx, dir)
	if err != nil {
		return "", err
	}
	headTree, err := repo.TreeOf(ctx, head)
	if err != nil || tree == headTree {
		return "", err
	}
	return repo.StableCommit(ctx, tree, "flume radar: uncommitted work", head)
}

// takeAt is Take with the work tree's snapshot known.
func takeAt(ctx context.Context, repo *git.Repo, head, base, snapshot string, last *record.Fingerprint) (*record.Fingerprint, error) {
	fp := &record.Fingerprint{Base: base, Head: head, Snapshot: snapshot}
	switch {
	case base == fp.Tip():
		fp.Files = []record.File{} // nothing over its base: no change to tell of
		return fp, nil
	case last != nil && last.Base == fp.Base && last.Head == fp.Head && last.Snapshot == fp.Snapshot:
		fp.Files, fp.Cut = slices.Clone(last.Files), last.Cut
		return fp, nil
	}
	changed, err := repo.ChangedLines(ctx, base, fp.Tip())
	if err != nil {
		return nil, err
	}
	fp.Files, fp.Cut = fromChanges(changed)
	return fp, nil
}

// fromChanges makes a fingerprint's files of a diff's, within the limits.
func fromChanges(changed []patch.File) ([]record.File, bool) {
	cut := len(changed) > record.MaxFiles
	if cut {
		changed = changed[:record.MaxFiles]
	}
	files := make([]record.File, 0, len(changed))
	for _, c := range changed {
		f := record.File{Path: c.Path, Spans: c.Spans, Hunks: c.Hunks}
		if len(f.Spans) > record.MaxSpans {
			f.Spans, f.Hunks = [][2]int{{c.Spans[0][0], c.Spans[len(c.Spans)-1][1]}}, nil
		}
		files = append(files, f)
	}
	return files, cut
}

// Overlap is the files where changes a and b are predicted to conflict:
// of one base, the files in which they replace the same or adjacent lines
// (git's merge conflicts there too), or which either changes as a whole;
// of different bases, the files both touch. Sorted; none when no file is
// shared.
func Overlap(a, b *record.Fingerprint) []string {
	if a == nil || b == nil {
		return nil
	}
	sameBase := a.Base == b.Base
	files := make(map[string]record.File, len(a.Files))
	for _, f := range a.Files {
		files[f.Path] = f
	}
	var out []string
	for _, f := range b.Files {
		other, ok := files[f.Path]
		if !ok {
			continue
		}
		if !sameBase || len(other.Spans) == 0 || len(f.Spans) == 0 || touch(other, f) {
			out = append(out, f.Path)
		}
	}
	slices.Sort(out)
	return out
}

// touch reports whether a hunk of a meets or borders a hunk of b that is
// not the same change: a hunk that replaces the same lines with the same
// lines on both sides (one change contained in the other, or both made
// alike) merges cleanly, as git merges it.
func touch(a, b record.File) bool {
	for i, x := range a.Spans {
		for j, y := range b.Spans {
			if x[0] <= y[1]+1 && y[0] <= x[1]+1 && !sameHunk(a, i, b, j) {
				return true
			}
		}
	}
	return false
}

// sameHunk reports hunk i of a and hunk j of b as one change: the same
// lines replaced by the same lines (known only where both keep digests).
func sameHunk(a record.File, i int, b record.File, j int) bool {
	return a.Spans[i] == b.Spans[j] && len(a.Hunks) == len(a.Spans) && len(b.Hunks) == len(b.Spans) && a.Hunks[i] == b.Hunks[j]
}
