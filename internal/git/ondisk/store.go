package ondisk

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
)

// Store reads and writes one repository's objects in process; its zero
// value is ready. It keeps the packs it mapped and the commits read for
// their type alone, whose content is asked for next.
type Store struct {
	// kept holds commits read while listing refs (see keep).
	keptMu sync.Mutex
	kept   map[string][]byte

	packs packSet
}

// Read returns object id's type and, unless headerOnly, its content, from
// the repository whose common directory is commonDir. A pack known is
// looked in first: after gc nearly every object is there, and a loose
// file tried first is a failed open for each. A commit read for its type
// alone is kept for the read of its content that follows (a record's:
// one inflate, not two).
func (s *Store) Read(commonDir, id string, headerOnly bool) (typ string, data []byte, err error) {
	if !isAnyHash(id) {
		return "", nil, fmt.Errorf("read object %q: not an object id", id)
	}
	if data, ok := s.take(id); ok {
		return "commit", data, nil
	}
	if s.packs.known(commonDir, id) {
		typ, data, err = s.packs.read(commonDir, id, headerOnly)
	} else if typ, data, err = readLoose(commonDir, id, headerOnly); errors.Is(err, fs.ErrNotExist) {
		typ, data, err = s.packs.read(commonDir, id, headerOnly)
	}
	if err == nil && headerOnly {
		s.keep(id, data)
		data = nil
	}
	return typ, data, err
}

// keep holds a commit's content read while listing refs until the read of
// its record's file takes it: one inflate per commit, not two.
func (s *Store) keep(id string, data []byte) {
	if data == nil {
		return
	}
	s.keptMu.Lock()
	defer s.keptMu.Unlock()
	if s.kept == nil || len(s.kept) >= maxKept {
		s.kept = map[string][]byte{} // a listing never read on (sync's) is forgotten
	}
	s.kept[id] = data
}

// maxKept bounds what a long-lived process (a watcher) keeps of listings
// it never read on.
const maxKept = 8192

func (s *Store) take(id string) ([]byte, bool) {
	s.keptMu.Lock()
	defer s.keptMu.Unlock()
	data, ok := s.kept[id]
	delete(s.kept, id)
	return data, ok
}

// CommitTree returns the tree commit id names; false when git must
// answer.
func (s *Store) CommitTree(commonDir, id string) (string, bool) {
	typ, data, err := s.Read(commonDir, id, false)
	if err != nil || typ != "commit" {
		return "", false
	}
	tree, err := TreeOfCommit(data)
	return tree, err == nil
}

// BlobAt returns the blob at path (which may name a file in a folder) in
// commit, "" when there is none there; false when git must answer.
func (s *Store) BlobAt(commonDir, commit, path string) (string, bool) {
	tree, ok := s.CommitTree(commonDir, commit)
	if !ok {
		return "", false
	}
	parts := strings.Split(path, "/")
	for i, part := range parts {
		typ, data, err := s.Read(commonDir, tree, false)
		if err != nil || typ != "tree" {
			return "", false
		}
		kind, id, err := FindInTree(data, part)
		switch {
		case err != nil:
			return "", false
		case id == "":
			return "", true
		case i < len(parts)-1:
			if kind != EntryDir {
				return "", true
			}
			tree = id
		case kind != EntryFile:
			return "", true // a folder or a submodule, not a file
		default:
			return id, true
		}
	}
	return "", true
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
