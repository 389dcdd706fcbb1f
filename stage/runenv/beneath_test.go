package runenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-flume/git-flume/stage/record"
)

// TestCopyBeneathWritesNothingOutside: a link where the copy goes is
// replaced, never written through; a link or a step out on the way is
// refused; the folder outside is untouched either way.
func TestCopyBeneathWritesNothingOutside(t *testing.T) {
	place, outside, tmpDir := t.TempDir(), t.TempDir(), t.TempDir()
	src := filepath.Join(t.TempDir(), "secret.env")
	if err := os.WriteFile(src, []byte("DB_PASSWORD=hunter2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	theirs := filepath.Join(outside, "db.env")
	if err := os.WriteFile(theirs, []byte("theirs"), 0o644); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(theirs, filepath.Join(place, "final.env")))
	must(os.Symlink(outside, filepath.Join(place, "conf")))
	must(os.MkdirAll(filepath.Join(place, "a", "b"), 0o755))
	must(os.Symlink(outside, filepath.Join(place, "a", "b", "c")))
	root, err := openDir(place)
	must(err)
	defer root.Close()
	tmp, err := openDir(tmpDir)
	must(err)
	defer tmp.Close()

	must(copyBeneath(src, root, tmp, "final.env"))
	if info, err := os.Lstat(filepath.Join(place, "final.env")); err != nil || !info.Mode().IsRegular() || info.Mode().Perm() != 0o600 {
		t.Errorf("final.env is %v (%v), want a regular 0600 file in place of the link", info, err)
	}
	for _, rel := range []string{"conf/db.env", "a/b/c/db.env", "../db.env", "a/../../db.env"} {
		if err := copyBeneath(src, root, tmp, rel); err == nil {
			t.Errorf("copyBeneath(%s) = nil, want refused", rel)
		}
	}
	must(copyBeneath(src, root, tmp, "new/dir/x.env"))
	if data, _ := os.ReadFile(theirs); string(data) != "theirs" {
		t.Errorf("the file outside holds %q, want it untouched", data)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Errorf("outside holds %d files, want its one", len(entries))
	}
	if entries, _ := os.ReadDir(tmpDir); len(entries) != 0 {
		t.Errorf("the temporary folder keeps %d files, want none", len(entries))
	}
	if err := copyBeneath(filepath.Join(place, "conf"), root, tmp, "x.env"); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a source that is a link: %v, want refused", err)
	}
}

// TestEnvFilesIntoALinkedPlaceRootAreSkipped: a place whose folder, or
// whose places folder, is a link gets no copy; each file says why.
func TestEnvFilesIntoALinkedPlaceRootAreSkipped(t *testing.T) {
	repoDir, outside := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(repoDir, "places"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := &record.Place{ID: "fix--one", Repo: repoDir, Path: filepath.Join(repoDir, "places", "fix--one")}
	if err := os.Symlink(outside, p.Path); err != nil {
		t.Fatal(err)
	}
	if _, err := placeRoot(p); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("placeRoot of a linked place: %v, want refused", err)
	}
	other := &record.Place{ID: "fix--two", Repo: t.TempDir()}
	if err := os.Symlink(outside, filepath.Join(other.Repo, "places")); err != nil {
		t.Fatal(err)
	}
	other.Path = filepath.Join(other.Repo, "places", "fix--two")
	if _, err := placeRoot(other); err == nil || !strings.Contains(err.Error(), "places is a symbolic link") {
		t.Errorf("placeRoot below a linked places folder: %v, want refused", err)
	}
	files := skipAll([]record.EnvFile{{Path: ".env"}, {Path: "a.env", Skipped: "its own"}}, "why")
	if files[0].Skipped != "why" || files[1].Skipped != "its own" {
		t.Errorf("skipAll = %+v", files)
	}
}
