package gitconfig

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// configCorpus holds config texts whose reading is easy to get wrong: each
// is read in process and by `git config --file F --list -z`, and the two
// must agree, or the in-process reader must give the file to git.
var configCorpus = []string{
	"",
	"[core]\n\tbare = false\n",
	"[Core]\n\tBare = false\n[core]bare=true",
	"[flume]\n\thost = box-1\n\tremote = origin\n\tautosync\n",
	"[flume] host = a ; comment\n",
	"[flume]\nhost = \"a ; not a comment\" # comment\n",
	"[flume]\nhost =   spaced   out   value   \n",
	"[flume]\nhost = tab\there\n",
	"[flume]\nhost = \"  kept  \"  \n",
	"[flume]\nhost = a\\\nb\n",
	"[flume]\nhost = \"a\\\nb\"\n",
	"[flume]\nhost = esc\\t\\n\\b\\\\\\\"\n",
	"[flume]\nhost = bad\\x\n",
	"[flume]\nhost = \"unterminated\n",
	"[remote \"Origin\"]\n\turl = https://example.com/a.git\n",
	"[remote \"with \\\"quote\\\" and \\\\ \\x\"]\n\turl = u\n",
	"[Remote.Origin]\n\turl = legacy\n",
	"[section \"sub\"  ]\nk=v\n",
	"[section\"sub\"]\nk=v\n",
	"[section \"sub\"]x\nk=v\n",
	"[sec tion]\nk=v\n",
	"[]\nk=v\n",
	"[unterminated\nk=v\n",
	"key = outside\n",
	"[a]\n1key = v\n",
	"[a]\nkey-with-dash = v\nkey2 =\nkey3\n",
	"[a]\nkey#c = v\n",
	"[a]\nkey = v1\nkey = v2\n",
	"\xef\xbb\xbf[a]\nk = bom\n",
	"[a]\r\nk = crlf\r\n",
	"[a]\nk = lone\rcr\n",
	"# comment\n; comment\n[a] ; comment\nk = v",
	"[a]\nk = v\\",
	"[a]\nk = caf\xc3\xa9\n",
	"[a]\nk\xc3\xa9 = v\n",
	"[a]\nk = \"\"\n",
	"[a]\n  k  =  \"x\"y\"z\"  \n",
	"[include]\n\tpath = other\n",
	"[a]\nk = v\x00\n",
}

func TestParseConfigAgreesWithGit_R4(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	env := append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir, "XDG_CONFIG_HOME="+dir, "LC_ALL=C")
	// Texts git reads that are left to it on purpose: rare enough that a
	// process for them costs nothing.
	leftToGit := map[string]bool{
		"key = outside\n":  true, // a key in no section
		"[a]\nk = v\\":     true, // a continued line at the end of the file
		"[a]\nk = v\x00\n": true, // a NUL byte
	}
	for i, text := range configCorpus {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			inProcess, gitReads := checkConfigAgainstGit(t, dir, env, text)
			if gitReads && !inProcess && !leftToGit[text] {
				t.Errorf("%q: git reads it, the in-process reader gives it to git", text)
			}
		})
	}
}

// FuzzParseConfig: whatever the text, the in-process reading either gives
// up or agrees with git's.
func FuzzParseConfig(f *testing.F) {
	for _, text := range configCorpus {
		f.Add(text)
	}
	dir := f.TempDir()
	env := append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir, "XDG_CONFIG_HOME="+dir, "LC_ALL=C")
	f.Fuzz(func(t *testing.T, text string) { checkConfigAgainstGit(t, dir, env, text) })
}

// readByGit is text as `git config --file --list` reads it, or git's
// refusal.
func readByGit(t *testing.T, dir string, env []string, text string) ([]Entry, error) {
	t.Helper()
	path := filepath.Join(dir, "config")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "config", "--file", path, "--list", "-z")
	cmd.Env = env
	out, err := cmd.Output()
	return ParseList(out), err
}

// checkConfigAgainstGit fails when text is read in process other than as
// git reads it, and says whether it was read in process and by git.
func checkConfigAgainstGit(t *testing.T, dir string, env []string, text string) (inProcess, gitReads bool) {
	t.Helper()
	got, ok := Parse([]byte(text))
	want, err := readByGit(t, dir, env, text)
	if !ok {
		return false, err == nil // git's to read, or to refuse
	}
	if err != nil {
		t.Fatalf("%q: read in process as %q, git refuses it: %v", text, got, err)
	}
	if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
		t.Fatalf("%q:\n in process %q\n git        %q", text, got, want)
	}
	return true, true
}
