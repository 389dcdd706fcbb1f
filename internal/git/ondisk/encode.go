package ondisk

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"
)

// TreeFile is one regular file of a flat tree: its name and blob id.
type TreeFile struct {
	Name string
	ID   string
}

// EncodeTree encodes a flat tree of regular files as git does: entries
// "100644 <name>\x00<20-byte id>", ordered bytewise by name (regular
// files only: a folder would sort as "name/").
func EncodeTree(entries []TreeFile) (*Encoded, error) {
	es := slices.Clone(entries)
	slices.SortFunc(es, func(a, b TreeFile) int { return strings.Compare(a.Name, b.Name) })
	var buf bytes.Buffer
	for _, e := range es {
		raw, err := hex.DecodeString(e.ID)
		if err != nil || len(raw) != 20 || e.Name == "" || strings.ContainsAny(e.Name, "/\x00") {
			return nil, fmt.Errorf("tree entry %q %q: not a file name and object id", e.Name, e.ID)
		}
		buf.WriteString("100644 ")
		buf.WriteString(e.Name)
		buf.WriteByte(0)
		buf.Write(raw)
	}
	return Encode("tree", buf.Bytes()), nil
}

// EncodeCommit encodes a commit as git does: tree, parents, author and
// committer, both name <email> at when ("<unix seconds> <+hhmm>"), a
// blank line, the message.
func EncodeCommit(tree string, parents []string, name, email string, when time.Time, message string) (*Encoded, error) {
	for _, id := range append([]string{tree}, parents...) {
		if !IsSHA1ID(id) {
			return nil, fmt.Errorf("commit: %q is not an object id", id)
		}
	}
	if strings.ContainsAny(name+email, "<>\n\x00") {
		return nil, fmt.Errorf("commit: identity %q <%s> has a character git refuses", name, email)
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "tree %s\n", tree)
	for _, p := range parents {
		fmt.Fprintf(&buf, "parent %s\n", p)
	}
	sig := fmt.Sprintf("%s <%s> %d %s", name, email, when.Unix(), when.Format("-0700"))
	fmt.Fprintf(&buf, "author %s\ncommitter %s\n\n%s", sig, sig, message)
	return Encode("commit", buf.Bytes()), nil
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
