//go:build gogitstore

package ondisk

import (
	"io"
	"sync"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"
)

// The build that reads objects with go-git's storage instead of this
// package's readers (go build -tags gogitstore): the other side of the
// benchmark that decides which reads them (scripts/bench-objects).

// gogitObjects is one repository's go-git object storage.
type gogitObjects struct {
	once sync.Once
	// mu: go-git's storage reads one object at a time.
	mu      sync.Mutex
	storage *filesystem.ObjectStorage
}

// gogitStorages are the storages by common directory: this build only.
var gogitStorages sync.Map

// EncodedObject returns object id's type and, unless headerOnly, its
// content, read by go-git's filesystem object storage.
func (s *Storer) EncodedObject(id string, headerOnly bool) (typ string, data []byte, err error) {
	v, _ := gogitStorages.LoadOrStore(s.Dir, &gogitObjects{})
	gg := v.(*gogitObjects)
	gg.once.Do(func() {
		gg.storage = filesystem.NewObjectStorageWithOptions(dotgit.New(osfs.New(s.Dir)), cache.NewObjectLRUDefault(), filesystem.Options{KeepDescriptors: true})
	})
	if !IsSHA1ID(id) {
		return "", nil, errNotPacked
	}
	gg.mu.Lock()
	defer gg.mu.Unlock()
	obj, err := gg.storage.EncodedObject(plumbing.AnyObject, plumbing.NewHash(id))
	if err != nil {
		return "", nil, err
	}
	if headerOnly {
		return obj.Type().String(), nil, nil
	}
	r, err := obj.Reader()
	if err != nil {
		return "", nil, err
	}
	defer r.Close()
	data, err = io.ReadAll(r)
	return obj.Type().String(), data, err
}
