package runenv

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestCloneTreeCopiesNeverShares: a dependency folder's clone holds the
// same files and symlinks, each file its own (no hard link), and a change
// in the clone never reaches the template.
func TestCloneTreeCopiesNeverShares(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	os.MkdirAll(filepath.Join(src, "pkg", ".bin"), 0o755)
	os.WriteFile(filepath.Join(src, "pkg", "index.js"), []byte("v1"), 0o644)
	os.WriteFile(filepath.Join(src, "pkg", "run.sh"), []byte("#!/bin/sh"), 0o755)
	os.Symlink("../index.js", filepath.Join(src, "pkg", ".bin", "pad"))
	dst := filepath.Join(dir, "dst")
	method, err := cloneTree(src, dst)
	if err != nil || (method != "reflink" && method != "copy") {
		t.Fatalf("clone: %q %v", method, err)
	}
	if got, _ := os.ReadFile(filepath.Join(dst, "pkg", "index.js")); string(got) != "v1" {
		t.Fatalf("clone holds %q", got)
	}
	if info, _ := os.Stat(filepath.Join(dst, "pkg", "run.sh")); info.Mode().Perm() != 0o755 {
		t.Fatalf("mode %v", info.Mode())
	}
	if target, err := os.Readlink(filepath.Join(dst, "pkg", ".bin", "pad")); err != nil || target != "../index.js" {
		t.Fatalf("symlink %q %v", target, err)
	}
	var st syscall.Stat_t
	syscall.Stat(filepath.Join(dst, "pkg", "index.js"), &st)
	if st.Nlink != 1 {
		t.Fatalf("the clone's file has %d links", st.Nlink)
	}
	os.WriteFile(filepath.Join(dst, "pkg", "index.js"), []byte("changed"), 0o644)
	if got, _ := os.ReadFile(filepath.Join(src, "pkg", "index.js")); string(got) != "v1" {
		t.Fatalf("a change in the clone reached the template: %q", got)
	}
}
