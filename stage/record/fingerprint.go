package record

import (
	"fmt"
	"strings"

	"github.com/git-flume/git-flume/internal/git"
)

// A change's fingerprint, as a place's record keeps it for the conflict
// radar (stage/radar takes and compares them).

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
	// Hunks are, one for each span, a digest of the lines the change puts
	// there (16 hex digits): where two changes replace a span with the
	// same lines they made the same change, which merges cleanly. None in
	// fingerprints taken before they were kept, nor where the spans were
	// joined into one (past MaxSpans).
	Hunks []string `json:"hunks,omitempty"`
}

// Tip is the commit the radar merges for this fingerprint: its snapshot
// of uncommitted work if any, else its head.
func (f *Fingerprint) Tip() string {
	if f.Snapshot != "" {
		return f.Snapshot
	}
	return f.Head
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
		if len(file.Hunks) > 0 && len(file.Hunks) != len(file.Spans) {
			return fmt.Errorf("fingerprint: %s: %d hunk digests for %d line ranges", file.Path, len(file.Hunks), len(file.Spans))
		}
		for _, h := range file.Hunks {
			if len(h) != 16 || strings.Trim(h, "0123456789abcdef") != "" {
				return fmt.Errorf("fingerprint: %s: hunk digest %q", file.Path, h)
			}
		}
	}
	return nil
}
