package ondisk

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"
)

// TestPackedObjectsReadAsGitReadsThem_R4: every object of repositories
// packed the ways git packs (deltas by offset, deltas by id, chains as
// deep as an aggressive repack makes, several packs) is read in process
// exactly as `git cat-file` reads it, and as go-git's storage reads it,
// type and content: the hand-written reader stays only where it beats
// go-git's (DESIGN.md), and then reads what both read.
func TestPackedObjectsReadAsGitReadsThem_R4(t *testing.T) {
	for _, c := range []struct {
		name   string
		config []string
		repack [][]string
	}{
		{name: "offset deltas", repack: [][]string{{"gc", "-q"}}},
		{name: "id deltas", config: []string{"repack.useDeltaBaseOffset=false"}, repack: [][]string{{"repack", "-a", "-d", "-f", "-q"}}},
		{name: "deep chains", repack: [][]string{{"repack", "-a", "-d", "-f", "-q", "--depth=250", "--window=250"}}},
		{name: "two packs", repack: [][]string{{"repack", "-d", "-q"}, {"commit", "-q", "--allow-empty", "-m", "more"}, {"repack", "-d", "-q"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, env, run := gitTestRepo(t)
			for _, kv := range c.config {
				k, v, _ := strings.Cut(kv, "=")
				run("config", k, v)
			}
			// Records much alike: a state file changed a little each
			// commit, and a larger file to give deltas something to copy.
			big := strings.Repeat("line of a long file that changes little\n", 400)
			for i := range 60 {
				os.WriteFile(filepath.Join(dir, "state.json"), fmt.Appendf(nil, `{"schema":1,"kind":"place","n":%d,"brief":"%s"}`, i, strings.Repeat("x", i)), 0o644)
				os.WriteFile(filepath.Join(dir, "big.txt"), []byte(big+strings.Repeat("tail\n", i)), 0o644)
				run("add", "-A")
				run("commit", "-q", "-m", fmt.Sprint("commit ", i))
			}
			for _, args := range c.repack {
				run(args...)
			}
			if loose, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "??", "*")); len(loose) > 0 {
				t.Fatalf("%d loose objects left", len(loose))
			}
			if c.name == "two packs" && len(packs(t, dir)) != 2 {
				t.Fatalf("packs: %v", packs(t, dir))
			}
			var s Store
			commonDir := filepath.Join(dir, ".git")
			gogit := filesystem.NewObjectStorage(dotgit.New(osfs.New(commonDir)), cache.NewObjectLRUDefault())
			ids := strings.Fields(run("cat-file", "--batch-all-objects", "--batch-check=%(objectname)"))
			if len(ids) < 200 {
				t.Fatalf("only %d objects", len(ids))
			}
			deltas := 0
			for _, pack := range packs(t, dir) {
				for _, line := range strings.Split(strings.TrimSpace(run("verify-pack", "-v", pack)), "\n") {
					if f := strings.Fields(line); len(f) >= 7 && len(f[0]) == 40 {
						deltas++
					}
				}
			}
			if deltas == 0 {
				t.Fatal("no deltas in the pack")
			}
			for _, id := range ids {
				typ, data, err := s.packs.read(commonDir, id, false)
				if err != nil {
					t.Fatalf("%s: %v", id, err)
				}
				want := run("cat-file", "-t", id)
				if typ != strings.TrimSpace(want) {
					t.Fatalf("%s: type %s, git says %s", id, typ, want)
				}
				cmd := exec.Command("git", "cat-file", typ, id)
				cmd.Env = env
				content, err := cmd.Output()
				if err != nil || !bytes.Equal(content, data) {
					t.Fatalf("%s (%s): read %d bytes, git %d (%v)", id, typ, len(data), len(content), err)
				}
				if gtyp, gdata, err := readWithGoGit(gogit, id); err != nil || gtyp != typ || !bytes.Equal(gdata, data) {
					t.Fatalf("%s (%s): read %d bytes, go-git %s of %d bytes (%v)", id, typ, len(data), gtyp, len(gdata), err)
				}
				if htyp, _, err := s.packs.read(commonDir, id, true); err != nil || htyp != typ {
					t.Fatalf("%s: header only: %s, %v", id, htyp, err)
				}
			}
			if _, _, err := s.packs.read(commonDir, strings.Repeat("0", 40), false); err == nil {
				t.Fatal("an object in no pack was read")
			}
		})
	}
}

// readWithGoGit reads object id as go-git's storage does.
func readWithGoGit(st *filesystem.ObjectStorage, id string) (string, []byte, error) {
	obj, err := st.EncodedObject(plumbing.AnyObject, plumbing.NewHash(id))
	if err != nil {
		return "", nil, err
	}
	r, err := obj.Reader()
	if err != nil {
		return "", nil, err
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	return obj.Type().String(), data, err
}

func packs(t *testing.T, dir string) []string {
	p, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "*.pack"))
	if len(p) == 0 {
		t.Fatal("no pack")
	}
	return p
}

// FuzzApplyDelta: a delta, however malformed, is refused or applied within
// its declared size; never a panic.
func FuzzApplyDelta(f *testing.F) {
	f.Add([]byte("hello world"), []byte{11, 5, 0x90, 5})
	f.Add([]byte("abc"), []byte{3, 4, 0x91, 1, 2, 2, 'x', 'y'})
	f.Fuzz(func(t *testing.T, base, delta []byte) {
		out, err := applyDelta(base, delta)
		if err == nil && len(out) > maxObject {
			t.Fatal("result larger than allowed")
		}
	})
}
