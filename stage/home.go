// Where a place's record may be acted on, and which place a command runs in.

package stage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/internal/git/ondisk"
	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage/record"
)

// HomeError refuses to act on a place whose record does not live here: it
// names another repository's checkout, or its places/ folder or worktree
// path is not a real folder inside this repository. Such a record is
// reported, never acted on.
type HomeError struct {
	Place  string
	Reason string
}

func (e *HomeError) Error() string {
	return fmt.Sprintf("place %s is not acted on: %s", e.Place, e.Reason)
}

// CheckHome is what ValidatePlace cannot check from the record alone,
// checked before flume acts on a place: the record is this host's, its
// repo is this repository's main checkout, and neither places/ nor the
// place's own folder is a symlink (or anything but a folder), so that
// every path flume acts on resolves inside <repo>/places/ (T2); and the
// git files its agent may write are as git wrote them (A13).
func CheckHome(ctx context.Context, env *Env, repo *git.Repo, p *record.Place) error {
	if err := OwnedHere(env, p); err != nil {
		return err
	}
	main, err := repo.MainCheckout(ctx)
	if err != nil {
		return err
	}
	if !samePath(main, p.Repo) {
		return &HomeError{Place: p.ID, Reason: fmt.Sprintf("its record names the checkout %s, but this repository's is %s", p.Repo, main)}
	}
	for _, dir := range []string{filepath.Join(p.Repo, record.PlacesDir), p.Path} {
		if why := NotRealDir(dir); why != "" {
			return &HomeError{Place: p.ID, Reason: why + "; flume acts only inside the repository's own places/ folder"}
		}
	}
	// A13: its agent may write these; git run there, or a move of its
	// branch, would follow them.
	if _, err := os.Lstat(p.Path); err == nil {
		if changed := ondisk.PlaceFilesChanged(repo.CommonDir, p.Path, p.BranchRef()); changed != "" {
			return &HomeError{Place: p.ID, Reason: "its git files were changed, and flume follows none of them: " + changed}
		}
	}
	return nil
}

// samePath compares two absolute paths, resolving symlinks above them (a
// temp folder behind /tmp, say) only when they differ as written.
func samePath(a, b string) bool {
	if a == b {
		return true
	}
	ra, errA := filepath.EvalSymlinks(a)
	rb, errB := filepath.EvalSymlinks(b)
	return errA == nil && errB == nil && ra == rb
}

// NotRealDir says why path is neither absent nor a real folder (a symlink,
// a file), or "".
func NotRealDir(path string) string {
	info, err := os.Lstat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return ""
	case err != nil:
		return err.Error()
	case info.Mode()&os.ModeSymlink != 0:
		return path + " is a symlink"
	case !info.IsDir():
		return path + " is not a folder"
	}
	return ""
}

// CallerPlace is the place whose agent runs this command ($FLUME_PLACE,
// set for every agent flume starts), "" for a person's shell.
func CallerPlace(env *Env) string {
	from := ""
	for _, kv := range env.CallerEnv {
		if v, ok := strings.CutPrefix(kv, "FLUME_PLACE="); ok {
			from = v
		}
	}
	return from
}

// PlaceAt is the place whose worktree repo was opened in (a launch run
// from inside a place's folder, with or without $FLUME_PLACE: A9), "" when
// it is not a place's.
func PlaceAt(ctx context.Context, store *refs.Store, repo *git.Repo) string {
	if repo.Bare || repo.GitDir == repo.CommonDir || filepath.Base(filepath.Dir(repo.Dir)) != record.PlacesDir {
		return ""
	}
	id := filepath.Base(repo.Dir)
	if _, err := record.PlaceID(id); err != nil {
		return ""
	}
	if _, p, err := record.ReadPlace(ctx, store, id); err == nil && p.Path == repo.Dir {
		return id
	}
	return ""
}

// ReadPlaceNames lists the repository's place ids from their ref names
// alone (one git process): for shell completion.
func ReadPlaceNames(ctx context.Context, env *Env, repoDir string) ([]string, error) {
	repo, _, err := env.Open(ctx, repoDir)
	if err != nil {
		return nil, err
	}
	list, err := repo.ListRefs(ctx, record.PlacePrefix)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(list))
	for _, r := range list {
		ids = append(ids, strings.TrimPrefix(r.Name, record.PlacePrefix))
	}
	return ids, nil
}
