//go:build linux

package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestMain runs the sandboxed half of TestSandboxHoldsWrites_A12 when the
// test binary is started as its helper.
func TestMain(m *testing.M) {
	if dir := os.Getenv("SANDBOX_HELPER_DIR"); dir != "" {
		os.Exit(helper(dir))
	}
	if os.Getenv("SANDBOX_VIEW_ALONE") != "" && len(os.Args) > 1 && os.Args[1] == Subcommand {
		os.Exit(viewHelper())
	}
	if os.Getenv("SANDBOX_SIDE_DOORS") != "" {
		os.Exit(sideDoorHelper())
	}
	os.Exit(m.Run())
}

// helper enters a sandbox that may write dir/in and the file dir/log, then
// tries what an agent would: each line it prints is one attempt's result.
func helper(dir string) int {
	in, outside, log := filepath.Join(dir, "in"), filepath.Join(dir, "outside"), filepath.Join(dir, "log")
	if err := (Sandbox{Dirs: []string{in}, Files: []string{log}}).Enter(); err != nil {
		os.Stdout.WriteString("enter: " + err.Error() + "\n")
		return 1
	}
	try := func(what string, err error) {
		res := "ok"
		if err != nil {
			res = "refused"
			if !errors.Is(err, syscall.EACCES) && !errors.Is(err, syscall.EPERM) && !errors.Is(err, syscall.EXDEV) {
				res = "failed: " + err.Error()
			}
		}
		os.Stdout.WriteString(what + ": " + res + "\n")
	}
	try("write inside", os.WriteFile(filepath.Join(in, "a"), []byte("x"), 0o644))
	try("make a folder inside", os.Mkdir(filepath.Join(in, "d"), 0o755))
	try("append to the file", appendTo(log))
	try("write outside", os.WriteFile(filepath.Join(dir, "b"), []byte("x"), 0o644))
	try("overwrite outside", os.WriteFile(outside, []byte("x"), 0o644))
	try("truncate outside", os.Truncate(outside, 0))
	try("remove outside", os.Remove(outside))
	try("rename outside in", os.Rename(outside, filepath.Join(in, "stolen")))
	try("symlink outside", os.Symlink(outside, filepath.Join(dir, "link")))
	try("write through a link made inside", writeThroughLink(in, outside))
	try("make a file beside the file", os.WriteFile(log+".lock", nil, 0o644))
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	try("unix socket", err)
	syscall.Close(fd)
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	try("socket pair", err)
	syscall.Close(fds[0])
	syscall.Close(fds[1])
	fd, err = syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	try("inet socket", err)
	syscall.Close(fd)
	if LandlockABI() >= 6 {
		try("signal the parent", syscall.Kill(os.Getppid(), 0))
	}
	return 0
}

func appendTo(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString("more\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func writeThroughLink(in, outside string) error {
	link := filepath.Join(in, "to-outside")
	if err := os.Symlink(outside, link); err != nil {
		return err
	}
	return os.WriteFile(link, []byte("x"), 0o644)
}

// TestSandboxHoldsWrites_A12: inside a sandbox a process writes only what
// it lists, through a symbolic link or not, makes no Unix socket (a server
// outside would act for it) and signals nothing outside; reading, pipes
// and the network stay.
func TestSandboxHoldsWrites_A12(t *testing.T) {
	if why := Unavailable(); why != "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI: %s", why)
		}
		t.Skip(why)
	}
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "in"), 0o755)
	os.WriteFile(filepath.Join(dir, "outside"), []byte("keep"), 0o644)
	os.WriteFile(filepath.Join(dir, "log"), nil, 0o644)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SANDBOX_HELPER_DIR="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	want := map[string]string{
		"write inside": "ok", "make a folder inside": "ok", "append to the file": "ok",
		"write outside": "refused", "overwrite outside": "refused", "truncate outside": "refused",
		"remove outside": "refused", "rename outside in": "refused", "symlink outside": "refused",
		"write through a link made inside": "refused", "make a file beside the file": "refused",
		"unix socket": "refused", "socket pair": "ok", "inet socket": "ok",
	}
	if LandlockABI() >= 6 {
		want["signal the parent"] = "refused"
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if what, res, ok := strings.Cut(line, ": "); ok {
			got[what] = res
		}
	}
	for what, res := range want {
		if got[what] != res {
			t.Errorf("%s: %q, want %q", what, got[what], res)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "outside")); string(data) != "keep" {
		t.Errorf("the file outside holds %q, want it unchanged", data)
	}
}

// TestParseReadsWhatWrapWrote: the sandbox's command line round-trips.
func TestParseReadsWhatWrapWrote(t *testing.T) {
	s := Sandbox{Dirs: []string{"/a", "/b c"}, Files: []string{"/f"}}
	argv := append(s.Wrap("git-flume")[2:], "claude", "--", "x")
	got, cmd, err := Parse(argv)
	if err != nil || strings.Join(got.Dirs, "|") != "/a|/b c" || strings.Join(got.Files, "|") != "/f" || strings.Join(cmd, " ") != "claude -- x" {
		t.Fatalf("Parse = %+v %q %v", got, cmd, err)
	}
	for _, bad := range [][]string{{"--dir"}, {"--"}, {"x"}, {"--dir", "/a"}} {
		if _, _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) took it", bad)
		}
	}
}
