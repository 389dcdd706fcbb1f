package ondisk

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// TreeFile is one regular file of a flat tree: its name and blob id.
type TreeFile struct {
	Name string
	ID   string
}

// EncodeTree encodes a flat tree of regular files as git does, with
// go-git: entries "100644 <name>\x00<20-byte id>", ordered bytewise by
// name (regular files only: a folder would sort as "name/").
func EncodeTree(entries []TreeFile) (*Encoded, error) {
	es := slices.Clone(entries)
	slices.SortFunc(es, func(a, b TreeFile) int { return strings.Compare(a.Name, b.Name) })
	t := object.Tree{Entries: make([]object.TreeEntry, 0, len(es))}
	for _, e := range es {
		if !IsSHA1ID(e.ID) || e.Name == "" || strings.ContainsAny(e.Name, "/\x00") {
			return nil, fmt.Errorf("tree entry %q %q: not a file name and object id", e.Name, e.ID)
		}
		t.Entries = append(t.Entries, object.TreeEntry{Name: e.Name, Mode: filemode.Regular, Hash: plumbing.NewHash(e.ID)})
	}
	return encodeWith(&t)
}

// EncodeCommit encodes a commit as git does, with go-git: tree, parents,
// author and committer, both name <email> at when ("<unix seconds>
// <+hhmm>"), a blank line, the message.
func EncodeCommit(tree string, parents []string, name, email string, when time.Time, message string) (*Encoded, error) {
	c := object.Commit{TreeHash: plumbing.NewHash(tree), Message: message}
	for _, id := range append([]string{tree}, parents...) {
		if !IsSHA1ID(id) {
			return nil, fmt.Errorf("commit: %q is not an object id", id)
		}
	}
	for _, p := range parents {
		c.ParentHashes = append(c.ParentHashes, plumbing.NewHash(p))
	}
	if strings.ContainsAny(name+email, "<>\n\x00") {
		return nil, fmt.Errorf("commit: identity %q <%s> has a character git refuses", name, email)
	}
	c.Author = object.Signature{Name: name, Email: email, When: when}
	c.Committer = c.Author
	return encodeWith(&c)
}

// encodeWith is what go-git's encoder of o writes, as an object here.
func encodeWith(o interface {
	Encode(plumbing.EncodedObject) error
}) (*Encoded, error) {
	var obj plumbing.MemoryObject
	if err := o.Encode(&obj); err != nil {
		return nil, err
	}
	r, err := obj.Reader()
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return &Encoded{Type: obj.Type().String(), Data: data, ID: obj.Hash().String()}, nil
}

// decoded is content of type typ as go-git's plumbing holds an object,
// for its decoders.
func decoded(typ plumbing.ObjectType, data []byte) *plumbing.MemoryObject {
	var obj plumbing.MemoryObject
	obj.SetType(typ)
	obj.SetSize(int64(len(data)))
	_, _ = obj.Write(data) // a write to memory
	return &obj
}

// TreeOfCommit is the tree a commit's content names, decoded with go-git.
func TreeOfCommit(data []byte) (string, error) {
	var c object.Commit
	if err := c.Decode(decoded(plumbing.CommitObject, data)); err != nil {
		return "", err
	}
	return c.TreeHash.String(), nil
}

// Entry kinds FindInTree tells apart.
const (
	EntryFile      = "file" // a regular file, executable or not, or a symlink
	EntryDir       = "dir"
	EntrySubmodule = "submodule"
)

// FindInTree decodes a tree's content with go-git and finds name among
// its entries: the entry's kind and id, "" when it is not there.
func FindInTree(tree []byte, name string) (kind, id string, err error) {
	var t object.Tree
	if err := t.Decode(decoded(plumbing.TreeObject, tree)); err != nil {
		return "", "", err
	}
	for _, e := range t.Entries {
		if e.Name != name {
			continue
		}
		switch e.Mode {
		case filemode.Dir:
			return EntryDir, e.Hash.String(), nil
		case filemode.Submodule:
			return EntrySubmodule, e.Hash.String(), nil
		}
		return EntryFile, e.Hash.String(), nil
	}
	return "", "", nil
}

// IsObjectID reports whether s is a full SHA-1 or SHA-256 object id in
// git's lowercase hex: what a record, a remote or a file may name.
func IsObjectID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := range len(s) {
		if !(s[i] >= '0' && s[i] <= '9' || s[i] >= 'a' && s[i] <= 'f') {
			return false
		}
	}
	return true
}

// IsSHA1ID reports a SHA-1 object id in git's lowercase hex: the only
// kind the in-process reader and writer handle.
func IsSHA1ID(s string) bool { return len(s) == 40 && IsObjectID(s) }
