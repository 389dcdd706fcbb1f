package ondisk

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestObjectsDecodedAsGitReadsThem_R4: every entry of real trees (a
// file, an executable, a symlink, a folder, a submodule, names that sort
// around "/") is found with the kind and id `git ls-tree` shows, a name
// not there is "", a commit's tree is the one git names, and a tree cut
// short is an error, never a guess.
func TestObjectsDecodedAsGitReadsThem_R4(t *testing.T) {
	dir, _, run := gitTestRepo(t)
	for name, content := range map[string]string{"a0": "a0\n", "a-b": "ab\n", "a.b": "a.b\n", "a/x": "x\n", "a/y/z": "z\n", "ü ü": "u\n", "run.sh": "#!/bin/sh\n"} {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)
	}
	os.Chmod(filepath.Join(dir, "run.sh"), 0o755)
	os.Symlink("a", filepath.Join(dir, "link"))
	run("add", "-A")
	run("commit", "-q", "-m", "one")
	first := strings.TrimSpace(run("rev-parse", "HEAD"))
	run("update-index", "--add", "--cacheinfo", "160000,"+first+",sub")
	run("commit", "-q", "-m", "two")
	run("checkout", "-q", "-b", "side", first)
	run("commit", "-q", "--allow-empty", "-m", "side")
	run("checkout", "-q", "-")
	run("merge", "-q", "--no-edit", "side")

	kinds := map[string]string{"blob": EntryFile, "tree": EntryDir, "commit": EntrySubmodule}
	for _, treeish := range []string{"HEAD^{tree}", "HEAD:a", "HEAD:a/y"} {
		tree := strings.TrimSpace(run("rev-parse", treeish))
		data := []byte(run("cat-file", "tree", tree))
		listed := strings.Split(strings.TrimSuffix(run("ls-tree", "-z", tree), "\x00"), "\x00")
		for _, line := range listed {
			meta, name, _ := strings.Cut(line, "\t")
			f := strings.Fields(meta) // mode, type, id
			kind, id, err := FindInTree(data, name)
			if err != nil || kind != kinds[f[1]] || id != f[2] {
				t.Errorf("%s: %q found as %s %s (%v), git lists %s", treeish, name, kind, id, err, meta)
			}
		}
		if kind, id, err := FindInTree(data, "absent"); err != nil || kind != "" || id != "" {
			t.Errorf("%s: an absent name found as %q %q (%v)", treeish, kind, id, err)
		}
	}
	for _, c := range []string{"HEAD", "HEAD^1", "HEAD^2"} {
		want := strings.TrimSpace(run("rev-parse", c+"^{tree}"))
		if got, err := TreeOfCommit([]byte(run("cat-file", "commit", c))); err != nil || got != want {
			t.Errorf("%s: tree %s (%v), git names %s", c, got, err, want)
		}
	}

	root := []byte(run("cat-file", "tree", "HEAD^{tree}"))
	if _, _, err := FindInTree(root[:len(root)-5], "zzz"); err == nil {
		t.Error("a tree cut in its last id read without an error")
	}
}
