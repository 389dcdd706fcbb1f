package radar

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/internal/git/patch"
)

// Limits keep a fingerprint small enough to travel in a record: beyond
// MaxSpans a file's ranges are one range from its first line to its last,
// beyond MaxFiles the fingerprint is Cut (its files are what it lists).
const (
	MaxFiles = 500
	MaxSpans = 32
)

// Fingerprint is what a change looks like to the radar: the files it
// touches against its base, each with the base's lines it replaces.
type Fingerprint struct {
	// Base is the commit the line ranges are in: the merge base of the
	// work and its target when it was taken.
	Base string `json:"base"`
	// Head is the branch's commit it was taken at.
	Head string `json:"head"`
	// Snapshot is a commit (its parent Head) holding the uncommitted work
	// as it was, when there was any; the radar merges it in Head's place.
	Snapshot string `json:"snapshot,omitempty"`
	Files    []File `json:"files"`
	// Cut: the change touched more files than MaxFiles; Files are the
	// first of them.
	Cut bool `json:"cut,omitempty"`
}

// File is one file of a fingerprint: its path and the base's lines the
// change replaces (1-based, inclusive; an insertion after line n is
// {n+1, n}). No spans: the file as a whole (a binary file, a mode).
type File struct {
	Path  string   `json:"path"`
	Spans [][2]int `json:"spans,omitempty"`
}

// Tip is the commit the radar merges for this fingerprint: its snapshot
// of uncommitted work if any, else its head.
func (f *Fingerprint) Tip() string {
	if f.Snapshot != "" {
		return f.Snapshot
	}
	return f.Head
}

// Same reports whether two fingerprints describe the same work.
func Same(a, b *Fingerprint) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Base == b.Base && a.Head == b.Head && a.Snapshot == b.Snapshot && a.Cut == b.Cut && slices.EqualFunc(a.Files, b.Files, func(x, y File) bool {
		return x.Path == y.Path && slices.Equal(x.Spans, y.Spans)
	})
}

// Take fingerprints the work of branch head against target: its commits,
// and, when dir is its work tree, its uncommitted work too (a snapshot
// through a throwaway index: HEAD, the branch and the real index are not
// touched; the snapshot's commit is written, no ref names it, and the same
// work makes the same commit again).
func Take(ctx context.Context, repo *git.Repo, dir, head, target string) (*Fingerprint, error) {
	base, err := repo.MergeBase(ctx, head, target)
	if err != nil {
		return nil, err
	}
	fp := &Fingerprint{Base: base, Head: head}
	if dir != "" {
		tree, err := repo.SnapshotTree(ctx, dir)
		if err != nil {
			return nil, err
		}
		headTree, err := repo.TreeOf(ctx, head)
		if err != nil {
			return nil, err
		}
		if tree != headTree {
			if fp.Snapshot, err = repo.StableCommit(ctx, tree, "flume radar: uncommitted work", head); err != nil {
				return nil, err
			}
		}
	}
	changed, err := repo.ChangedLines(ctx, base, fp.Tip())
	if err != nil {
		return nil, err
	}
	fp.Files, fp.Cut = fromChanges(changed)
	return fp, nil
}

// fromChanges makes a fingerprint's files of a diff's, within the limits.
func fromChanges(changed []patch.File) ([]File, bool) {
	cut := len(changed) > MaxFiles
	if cut {
		changed = changed[:MaxFiles]
	}
	files := make([]File, 0, len(changed))
	for _, c := range changed {
		f := File{Path: c.Path, Spans: c.Spans}
		if len(f.Spans) > MaxSpans {
			f.Spans = [][2]int{{c.Spans[0][0], c.Spans[len(c.Spans)-1][1]}}
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
func Overlap(a, b *Fingerprint) []string {
	if a == nil || b == nil {
		return nil
	}
	sameBase := a.Base == b.Base
	spans := make(map[string][][2]int, len(a.Files))
	for _, f := range a.Files {
		spans[f.Path] = f.Spans
	}
	var out []string
	for _, f := range b.Files {
		other, ok := spans[f.Path]
		if !ok {
			continue
		}
		if !sameBase || len(other) == 0 || len(f.Spans) == 0 || touch(other, f.Spans) {
			out = append(out, f.Path)
		}
	}
	slices.Sort(out)
	return out
}

// touch reports whether any range of a meets or borders any range of b.
func touch(a, b [][2]int) bool {
	for _, x := range a {
		for _, y := range b {
			if x[0] <= y[1]+1 && y[0] <= x[1]+1 {
				return true
			}
		}
	}
	return false
}

// Validate checks a fingerprint read from a record (untrusted: another
// host's, or a remote's) before the radar uses it.
func (f *Fingerprint) Validate() error {
	if !git.IsObjectID(f.Base) || !git.IsObjectID(f.Head) || (f.Snapshot != "" && !git.IsObjectID(f.Snapshot)) {
		return fmt.Errorf("fingerprint: base, head and snapshot must be object ids")
	}
	if len(f.Files) > MaxFiles {
		return fmt.Errorf("fingerprint: %d files, more than %d", len(f.Files), MaxFiles)
	}
	for _, file := range f.Files {
		if file.Path == "" || strings.ContainsRune(file.Path, 0) || strings.HasPrefix(file.Path, "/") {
			return fmt.Errorf("fingerprint: file path %q", file.Path)
		}
		if len(file.Spans) > MaxSpans {
			return fmt.Errorf("fingerprint: %s: %d line ranges, more than %d", file.Path, len(file.Spans), MaxSpans)
		}
		for _, s := range file.Spans {
			if s[0] < 1 || s[1] < s[0]-1 {
				return fmt.Errorf("fingerprint: %s: line range %d–%d", file.Path, s[0], s[1])
			}
		}
	}
	return nil
}
