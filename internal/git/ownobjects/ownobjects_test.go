package ownobjects

import (
	"bytes"
	"compress/zlib"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/git-flume/git-flume/internal/git"
)

func gitIn(t *testing.T, dir string, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t",
		"GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z")
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// writeLoose writes a loose object file in folder objects under id, of
// type typ holding content (which need not hash to id).
func writeLoose(t *testing.T, objects, id, typ, content string) {
	t.Helper()
	var b bytes.Buffer
	zw := zlib.NewWriter(&b)
	zw.Write([]byte(typ + " " + strconv.Itoa(len(content)) + "\x00" + content))
	zw.Close()
	dir := filepath.Join(objects, id[:2])
	os.MkdirAll(dir, 0o755)
	if err := os.WriteFile(filepath.Join(dir, id[2:]), b.Bytes(), 0o444); err != nil {
		t.Fatal(err)
	}
}

// TestImportTakesWhatHashesAndRefusesTheRest_A13: an agent's own folder
// holds a commit it made (loose), a pack it fetched, an object planted
// under a shared object's id with other content, junk under an object's
// name and a link to the shared store. Import takes in the commit and the
// pack, refuses the planted object and the junk, follows no link and
// changes no shared object; fsck --full is clean and the files taken and
// refused are gone from the agent's folder.
func TestImportTakesWhatHashesAndRefusesTheRest_A13(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	repoDir := filepath.Join(dir, "repo")
	gitIn(t, dir, "", "init", "-q", "-b", "main", repoDir)
	os.WriteFile(filepath.Join(repoDir, "test.sh"), []byte("echo ok\n"), 0o644)
	gitIn(t, repoDir, "", "add", ".")
	gitIn(t, repoDir, "", "commit", "-q", "-m", "base")
	shared := filepath.Join(repoDir, ".git", "objects")
	sharedBlob := gitIn(t, repoDir, "", "rev-parse", "HEAD:test.sh")
	sharedFile := filepath.Join(shared, sharedBlob[:2], sharedBlob[2:])
	before, _ := os.ReadFile(sharedFile)

	// What the agent wrote: a commit on main in a clone whose objects
	// are the agent's own, and a pack of other work.
	own := filepath.Join(dir, "own")
	side := filepath.Join(dir, "side")
	gitIn(t, dir, "", "clone", "-q", repoDir, side)
	os.WriteFile(filepath.Join(side, "new.txt"), []byte("mine\n"), 0o644)
	gitIn(t, side, "", "add", ".")
	gitIn(t, side, "", "commit", "-q", "-m", "mine")
	mine := gitIn(t, side, "", "rev-parse", "HEAD")
	os.MkdirAll(filepath.Join(own, "pack"), 0o755)
	for _, id := range strings.Fields(gitIn(t, side, "", "rev-list", "--objects", "--no-object-names", "HEAD", "--not", "origin/main")) {
		b, err := os.ReadFile(filepath.Join(side, ".git", "objects", id[:2], id[2:]))
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Join(own, id[:2]), 0o755)
		os.WriteFile(filepath.Join(own, id[:2], id[2:]), b, 0o444)
	}
	fetched := gitIn(t, side, "fetched\n", "hash-object", "-w", "--stdin")
	gitIn(t, side, fetched+"\n", "pack-objects", "-q", filepath.Join(own, "pack", "pack"))
	writeLoose(t, own, sharedBlob, "blob", "rm -rf ~\n")
	junk := "ab" + strings.Repeat("0", 38)
	os.MkdirAll(filepath.Join(own, "ab"), 0o755)
	os.WriteFile(filepath.Join(own, junk[:2], junk[2:]), []byte("not zlib"), 0o444)
	os.Symlink(filepath.Join(shared, sharedBlob[:2]), filepath.Join(own, "cd"))

	repo, err := (&git.Runner{}).Open(ctx, repoDir)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Import(ctx, repo, own)
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	if res.Taken != 4 { // commit, tree, blob and the pack
		t.Errorf("taken %d, want 4 (%+v)", res.Taken, res)
	}
	refused := strings.Join(res.Refused, "\n")
	if !strings.Contains(refused, sharedBlob[:2]+"/"+sharedBlob[2:]+": its content hashes to") || !strings.Contains(refused, junk[2:]+": not a loose object") || len(res.Refused) != 2 {
		t.Errorf("refused:\n%s\nwant the planted object and the junk", refused)
	}
	gitIn(t, repoDir, "", "cat-file", "-e", mine)
	gitIn(t, repoDir, "", "cat-file", "-e", fetched)
	if after, _ := os.ReadFile(sharedFile); !bytes.Equal(before, after) {
		t.Error("the shared object under the planted id changed")
	}
	if got := gitIn(t, repoDir, "", "cat-file", "blob", sharedBlob); got != "echo ok" {
		t.Errorf("main's test.sh reads %q", got)
	}
	gitIn(t, repoDir, "", "update-ref", "refs/heads/agent", mine)
	gitIn(t, repoDir, "", "fsck", "--full", "--strict", "--no-dangling")
	if _, err := os.Stat(filepath.Join(own, mine[:2], mine[2:])); err == nil {
		t.Error("the commit taken in is still in the agent's folder")
	}
	if _, err := os.Stat(filepath.Join(own, sharedBlob[:2], sharedBlob[2:])); err == nil {
		t.Error("the planted object refused is still in the agent's folder")
	}
	if left, _ := filepath.Glob(filepath.Join(own, "pack", "*")); len(left) != 0 {
		t.Errorf("the pack taken in is still in the agent's folder: %v", left)
	}
	if _, err := os.Stat(sharedFile); err != nil {
		t.Errorf("the shared object behind the agent's link: %v", err)
	}
	again, err := Import(ctx, repo, own)
	if err != nil || again.Taken != 0 {
		t.Errorf("a second import: %+v, %v; want nothing taken", again, err)
	}
}
