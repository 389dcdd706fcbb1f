package launchfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLaunchFileIsReadOnlyIfFlumes_A13: the launcher acts on a launch
// file only if it is one flume wrote: a link to another file, a file open
// to others, a file with a second name (a hard link someone made to keep
// it), and a folder open to others are each refused unread.
func TestLaunchFileIsReadOnlyIfFlumes_A13(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	os.Mkdir(dir, 0o700)
	write := func(name string, perm os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("payload"), perm); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, perm)
		return p
	}
	good := write("launch-good", 0o600)
	if b, err := readOwnFile(good); err != nil || string(b) != "payload" {
		t.Fatalf("flume's own file: %q, %v", b, err)
	}
	other := write("other", 0o600)
	link := filepath.Join(dir, "launch-link")
	os.Symlink(other, link)
	open := write("launch-open", 0o644)
	twice := write("launch-twice", 0o600)
	os.Link(twice, filepath.Join(dir, "kept"))
	for name, p := range map[string]string{"a link": link, "a file open to others": open, "a file with two names": twice} {
		if b, err := readOwnFile(p); err == nil {
			t.Errorf("%s was read: %q", name, b)
		}
	}
	os.Chmod(dir, 0o755)
	if _, err := readOwnFile(good); err == nil || !strings.Contains(err.Error(), "not a folder private") {
		t.Errorf("a file in a folder open to others: %v, want refused", err)
	}
}
