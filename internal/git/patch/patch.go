package patch

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// File is a file a change from one commit to another touches, with
// the line ranges of the first commit's version it replaces.
type File struct {
	Path string
	// Spans are the first version's lines each hunk replaces, 1-based and
	// inclusive; a pure insertion after line n is {n+1, n}. None for a
	// change without text hunks (binary, mode only).
	Spans [][2]int
	// Hunks are, for each span, a digest of the lines the hunk puts in
	// its place (HunkDigest): two changes that replace one span with the
	// same lines made the same change there, which git merges cleanly.
	Hunks []string
}

// HunkDigest is the digest of a hunk's new lines, as File.Hunks holds it:
// the first 16 hex digits of their SHA-256, each line with its newline.
func HunkDigest(lines []string) string {
	h := sha256.New()
	for _, l := range lines {
		h.Write([]byte(l))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Parse reads a `git diff --unified=0 --no-renames` patch.
func Parse(patch []byte) ([]File, error) {
	var files []File
	var added []string // the current hunk's new lines
	inHunk := false
	end := func() {
		if inHunk {
			f := &files[len(files)-1]
			f.Hunks = append(f.Hunks, HunkDigest(added))
		}
		added, inHunk = added[:0], false
	}
	sc := bufio.NewScanner(bytes.NewReader(patch))
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "diff --git "):
			end()
			path, err := diffGitPath(strings.TrimPrefix(line, "diff --git "))
			if err != nil {
				return nil, err
			}
			files = append(files, File{Path: path})
		case strings.HasPrefix(line, "@@ -") && len(files) > 0:
			end()
			span, err := hunkSpan(line)
			if err != nil {
				return nil, err
			}
			f := &files[len(files)-1]
			f.Spans = append(f.Spans, span)
			inHunk = true
		case inHunk && strings.HasPrefix(line, "+"):
			added = append(added, line[1:])
		case inHunk && line == `\ No newline at end of file` && len(added) > 0:
			added[len(added)-1] += "\x00" // not the same lines as with one
		}
	}
	end()
	return files, sc.Err()
}

// diffGitPath is the path of a `diff --git a/P b/P` line's rest, where both
// names are the same (renames are not followed), each quoted C-style when
// it holds unusual characters.
func diffGitPath(rest string) (string, error) {
	if strings.HasPrefix(rest, `"`) {
		q, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return "", fmt.Errorf("diff header %q: %w", rest, err)
		}
		name, err := strconv.Unquote(q)
		if err != nil || !strings.HasPrefix(name, "a/") {
			return "", fmt.Errorf("diff header %q: not a quoted a/ name", rest)
		}
		return name[2:], nil
	}
	// a/P b/P: the two names are the same, so the first is half of what is
	// left after the space and the prefixes.
	if len(rest) < 5 || (len(rest)-5)%2 != 0 || !strings.HasPrefix(rest, "a/") {
		return "", fmt.Errorf("diff header %q: not a/P b/P", rest)
	}
	n := (len(rest) - 5) / 2
	path := rest[2 : 2+n]
	if rest[2+n:] != " b/"+path {
		return "", fmt.Errorf("diff header %q: names differ", rest)
	}
	return path, nil
}

// hunkSpan reads the first version's lines from a hunk header
// "@@ -s[,n] +t[,m] @@".
func hunkSpan(header string) ([2]int, error) {
	old, _, ok := strings.Cut(strings.TrimPrefix(header, "@@ -"), " ")
	if !ok {
		return [2]int{}, fmt.Errorf("hunk header %q", header)
	}
	start, count, hasCount := strings.Cut(old, ",")
	s, err := strconv.Atoi(start)
	if err != nil || s < 0 {
		return [2]int{}, fmt.Errorf("hunk header %q", header)
	}
	n := 1
	if hasCount {
		if n, err = strconv.Atoi(count); err != nil || n < 0 {
			return [2]int{}, fmt.Errorf("hunk header %q", header)
		}
	}
	if n == 0 {
		return [2]int{s + 1, s}, nil // inserted after line s
	}
	return [2]int{s, s + n - 1}, nil
}
