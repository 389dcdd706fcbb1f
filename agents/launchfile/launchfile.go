package launchfile

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/git-flume/git-flume/agents/sandbox"
	"github.com/git-flume/git-flume/internal/proc"
)

// An agent's environment holds its API keys. A command line is readable by
// every local user (ps, /proc/<pid>/cmdline), and tmux's server keeps the
// command line of the client that started it, so the environment never
// goes on one: it is written to a file only its user can read, and a
// launcher (git-flume agent-exec) reads and removes that file, enters the
// place and executes the agent with exactly that environment.

// envDir is the folder of launch files: private to the user.
func envDir() (string, error) {
	base := os.Getenv("XDG_RUNTIME_DIR")
	if base == "" {
		base = os.TempDir()
	}
	dir := filepath.Join(base, fmt.Sprintf("flume-%d", os.Getuid()))
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	return ownFolder(dir)
}

// ownFolder is dir if it is a folder private to this user: one someone
// else made, or opened to others, or a link to one, is not ours to trust
// with a key.
func ownFolder(dir string) (string, error) {
	info, err := os.Lstat(dir)
	if err != nil {
		return "", err
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !info.IsDir() || !ok || int(st.Uid) != os.Getuid() || info.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("environment folder %s is not a folder private to this user", dir)
	}
	return dir, nil
}

// launchFile is what the launcher reads: the agent's folder, command line
// and environment.
type launchFile struct {
	Dir  string   `json:"dir"`
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
}

// Write writes what the launcher needs to start argv in dir with
// exactly env to a new file readable only by the user, and returns its
// path. The command line stays off every command line too: tmux ends a
// command at an argument ending in ";", and a prompt may.
func Write(dir string, env, argv []string) (string, error) {
	folder, err := envDir()
	if err != nil {
		return "", err
	}
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	data, err := json.Marshal(launchFile{Dir: dir, Argv: argv, Env: env})
	if err != nil {
		return "", err
	}
	path := filepath.Join(folder, "launch-"+hex.EncodeToString(b[:]))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return "", err
	}
	return path, nil
}

// Exec is the launcher's work: read and remove the launch file, enter its
// folder — one that is gone is an error, never a fallback to wherever the
// pane host started (A10) — and replace this process with the agent's
// command, found on its environment's PATH, with exactly that environment.
// It returns only on failure.
func Exec(file string) error {
	data, err := readOwnFile(file)
	os.Remove(file)
	if err != nil {
		return fmt.Errorf("read the agent's launch file: %w", err)
	}
	var l launchFile
	if err := json.Unmarshal(data, &l); err != nil {
		return fmt.Errorf("read the agent's launch file: %w", err)
	}
	if len(l.Argv) == 0 {
		return errors.New("the launch file names no command")
	}
	if err := os.Chdir(l.Dir); err != nil {
		return fmt.Errorf("enter the place %s: %w", l.Dir, err)
	}
	path, err := proc.LookPath(l.Argv[0], l.Env)
	if err != nil {
		return fmt.Errorf("find %s on the agent's PATH: %w", l.Argv[0], err)
	}
	env := []string{"PWD=" + l.Dir}
	for _, kv := range l.Env {
		if !strings.HasPrefix(kv, "PWD=") {
			env = append(env, kv)
		}
	}
	return syscall.Exec(path, l.Argv, env)
}

// ExecCommand is the hidden command tmux runs in an agent's new pane: it
// reads the agent's launch file and becomes the agent (Exec).
const ExecCommand = "agent-exec"

// Launcher reports a command line that becomes an agent: agent-exec in an
// agent's new pane, or agent-sandbox starting an agent's command line in
// its boundary (A12, A13). Either reads nothing but its launch file or
// its arguments: no repository, no flags (A10).
func Launcher(args []string) bool {
	return len(args) == 3 && args[1] == ExecCommand || len(args) > 1 && args[1] == sandbox.Subcommand
}

// Become is a launcher's work (Launcher): it returns only on failure.
func Become(args []string) error {
	if args[1] == ExecCommand {
		return Exec(args[2])
	}
	return sandbox.Exec(args[2:])
}

// readOwnFile reads a runtime file flume wrote (A13): opened without
// following a link, and only if it is a regular file with one name, this
// user's and private to it, in a folder that is too. A file that is not
// so was put there by someone else and is never acted on.
func readOwnFile(path string) ([]byte, error) {
	if _, err := ownFolder(filepath.Dir(path)); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !info.Mode().IsRegular() || !ok || int(st.Uid) != os.Getuid() || st.Nlink != 1 || info.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s is not a file flume wrote (a regular file, this user's alone, with one name)", path)
	}
	return io.ReadAll(f)
}

// endingFor is how long a mark that flume is ending a session holds: the
// time an end takes to be verified and recorded, with room for a loaded
// machine.
const endingFor = 30 * time.Second

// MarkEnding notes that flume is about to end session, so that a watcher
// that sees its agent go meanwhile does not record an end flume caused as
// the agent's own (A10). Best effort: without the mark a watcher may only
// misname who ended it.
func MarkEnding(session string) {
	dir, err := envDir()
	if err != nil || session == "" {
		return
	}
	_ = os.WriteFile(filepath.Join(dir, "ending-"+session), nil, 0o600) // best effort, as said
	// Marks of long-ended sessions go.
	if old, err := filepath.Glob(filepath.Join(dir, "ending-*")); err == nil {
		for _, f := range old {
			if info, err := os.Stat(f); err == nil && time.Since(info.ModTime()) > time.Hour {
				os.Remove(f)
			}
		}
	}
}

// Ending reports whether flume is ending session now (End marked it
// within endingFor): its agent's end is flume's, not its own.
func Ending(session string) bool {
	dir, err := envDir()
	if err != nil || session == "" {
		return false
	}
	info, err := os.Stat(filepath.Join(dir, "ending-"+session))
	return err == nil && time.Since(info.ModTime()) < endingFor
}
