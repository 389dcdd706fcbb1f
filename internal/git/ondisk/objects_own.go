//go:build !gogitstore

package ondisk

// EncodedObject returns object id's type and, unless headerOnly, its
// content, read by this package's readers of loose objects and packs
// (Store.Read): in a repository of a million objects, go-git's storage
// cost a command more than this package's readers do (DESIGN.md, "git's
// formats behind one boundary"), so they stay, fenced by
// TestPackedObjectsReadAsGitReadsThem_R4 against git and go-git both.
func (s *Storer) EncodedObject(id string, headerOnly bool) (typ string, data []byte, err error) {
	return s.Read(s.Dir, id, headerOnly)
}
