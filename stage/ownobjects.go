package stage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/internal/git/ondisk"
	"github.com/git-flume/git-flume/internal/git/ownobjects"
	"github.com/git-flume/git-flume/internal/term"
	"github.com/git-flume/git-flume/stage/record"
)

// TakeOwnObjects takes what the agent of the place at path (id, "" where
// no record names it) wrote in its own object folder into the shared
// store, each object hashed again (A13), before anything reads its
// branch. Each one refused is said in the place's log.
func TakeOwnObjects(ctx context.Context, repo *git.Repo, path, id string) error {
	admin := ondisk.WorktreeAdmin(repo.CommonDir, path)
	if admin == "" {
		return nil
	}
	res, err := ownobjects.Import(ctx, repo, ondisk.OwnObjects(repo.CommonDir, admin))
	if id != "" {
		logRefused(repo.CommonDir, id, res.Refused)
	}
	if err != nil {
		return fmt.Errorf("place at %s: %w", path, err)
	}
	return nil
}

// TakeAllOwnObjects takes in every agent's own object folder of the
// repository (TakeOwnObjects): before git writes objects from what
// another place's agent made (a child's start, a candidate's merge),
// where those objects must be in the shared store.
func TakeAllOwnObjects(ctx context.Context, repo *git.Repo) error {
	var errs []error
	for _, own := range ondisk.OwnObjectFolders(repo.CommonDir) {
		id := filepath.Base(own)
		res, err := ownobjects.Import(ctx, repo, own)
		logRefused(repo.CommonDir, id, res.Refused)
		if err != nil {
			errs = append(errs, fmt.Errorf("the own objects of %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

// logRefused says in place id's log each object refused from its agent's
// own folder.
func logRefused(commonDir, id string, refused []string) {
	if got, err := record.PlaceID(id); len(refused) == 0 || err != nil || got != id {
		return
	}
	log, err := OpenLog(commonDir, id)
	if err != nil {
		return
	}
	defer log.Close()
	w := Stamped(log, "objects")
	for _, r := range refused {
		fmt.Fprintf(w, "%s%s\n", refusedSay, term.Clean(r))
	}
}

// refusedSay begins each line of a place's log that names an object
// refused from its agent's own folder.
const refusedSay = "refused from the agent's own objects: "

// RefusedObjects reads place id's log for the objects refused from its
// agent's own folder (logRefused): how many in its last MiB, and the
// last one as said there. A read: nothing is written.
func RefusedObjects(commonDir, id string) (n int, last string) {
	f, err := os.Open(filepath.Join(LogDir(commonDir, id), "place.log"))
	if err != nil {
		return 0, ""
	}
	defer f.Close()
	const tail = 1 << 20
	if fi, err := f.Stat(); err == nil && fi.Size() > tail {
		_, _ = f.Seek(-tail, io.SeekEnd)
	}
	data, _ := io.ReadAll(io.LimitReader(f, tail))
	for line := range strings.Lines(string(data)) {
		if _, said, ok := strings.Cut(line, refusedSay); ok {
			n, last = n+1, strings.TrimSpace(said)
		}
	}
	return n, last
}
