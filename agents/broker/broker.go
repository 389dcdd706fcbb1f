package broker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/git-flume/git-flume/internal/proc"
)

// Verbs are what a sandboxed agent's git-flume hands to its watcher: the
// delegation verbs its prompt names, and submit (its branch to the
// lander, Q1). Any other runs where it was started, inside the sandbox,
// and writes nothing the sandbox holds.
var Verbs = map[string]bool{
	"launch": true, "wait": true, "accept": true, "reopen": true, "unblock": true, "rollback": true, "submit": true,
}

// InboxVar names the agent's inbox in its environment.
const InboxVar = "FLUME_INBOX"

// The files of one request in an inbox, by its id: the request as the
// agent wrote it; taken by a watcher (holding its pid); the answer.
const (
	reqSuffix   = ".req"
	takenSuffix = ".taken"
	resSuffix   = ".res"
)

// Bounds on what the inbox holds: a request's file, its arguments, and
// each of an answer's outputs.
const (
	maxRequest = 256 << 10
	maxArgs    = 64
	maxOutput  = 1 << 20
	// maxAnswer bounds an answer's file: two outputs at their bound,
	// every byte of them escaped by JSON (\u00XX, six bytes each).
	maxAnswer = 12*maxOutput + 4<<10
)

// Request is one verb as the agent's git-flume was started with it.
type Request struct {
	Args []string `json:"args"`
	Dir  string   `json:"dir"` // its working folder
}

// Result is how the verb ended, as the watcher ran it.
type Result struct {
	Code   int    `json:"code"`
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
}

// Inbox is where args are to go instead of running here: the agent's
// inbox when this git-flume runs in a sandbox ($FLUME_SANDBOX=landlock)
// that has one and args start with a brokered verb; "" otherwise.
func Inbox(environ, args []string) string {
	var sandboxed bool
	var inbox string
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "FLUME_SANDBOX="); ok {
			sandboxed = v == "landlock"
		}
		if v, ok := strings.CutPrefix(kv, InboxVar+"="); ok {
			inbox = v
		}
	}
	if !sandboxed || inbox == "" || len(args) == 0 || !Verbs[args[0]] {
		return ""
	}
	return inbox
}

// Check refuses a request the watcher must not run: a verb not brokered,
// --repo (the inbox is one place's, of one repository), too many or too
// long arguments, a NUL.
func (r Request) Check() error {
	switch {
	case len(r.Args) == 0 || !Verbs[r.Args[0]]:
		return errors.New("only launch, wait, accept, reopen, unblock and rollback go through the watcher")
	case len(r.Args) > maxArgs:
		return fmt.Errorf("%d arguments, more than %d", len(r.Args), maxArgs)
	}
	for _, a := range r.Args {
		if a == "--repo" || strings.HasPrefix(a, "--repo=") || a == "-repo" || strings.HasPrefix(a, "-repo=") {
			return errors.New("--repo is refused: an agent acts on its own repository")
		}
		if strings.ContainsRune(a, 0) {
			return errors.New("an argument holds a NUL")
		}
	}
	return nil
}

// newID is a request's name in its inbox.
func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// writeNew writes data as a new file of dir named final, through a
// temporary file of its own that nothing could have placed a link at
// (created exclusively, links not followed), renamed over final: in an
// inbox the agent may have put anything at final, and a rename replaces
// a link, never writes through it.
func writeNew(dir, final string, data []byte) error {
	tmp := filepath.Join(dir, ".tmp-"+newID())
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, final))
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

// readFile reads a regular file of at most limit bytes, never through a
// link and never blocking on a FIFO.
func readFile(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	switch {
	case err != nil:
		return nil, err
	case !info.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a regular file", filepath.Base(path))
	case info.Size() > limit:
		return nil, fmt.Errorf("%s holds %d bytes, more than %d", filepath.Base(path), info.Size(), limit)
	}
	return io.ReadAll(io.LimitReader(f, limit))
}

// takenBy is the pid of the watcher that took a request, 0 when unknown.
func takenBy(path string) int {
	data, err := readFile(path, 64)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	return pid
}

// Timing of a waiting agent: how often it looks for its answer; how long
// its request may lie untaken (no watcher serves the place) before it
// gives up.
const (
	answerPoll = 50 * time.Millisecond
	untakenFor = time.Minute
)

// Forward hands args, started in dir, to the watcher through inbox and
// waits for its answer: it writes the verb's output to stdout and stderr
// and returns its exit status. A request no watcher took within a
// minute, or whose watcher ended before it answered, is given up with
// why (status 1).
func Forward(ctx context.Context, inbox string, args []string, dir string, stdout, stderr io.Writer) int {
	id := newID()
	data, _ := json.Marshal(Request{Args: args, Dir: dir})
	if err := writeNew(inbox, id+reqSuffix, data); err != nil {
		fmt.Fprintf(stderr, "git-flume: %s runs through the place's watcher, and its request could not be written: %v\n", args[0], err)
		return 1
	}
	res, err := await(ctx, inbox, id)
	if err != nil {
		fmt.Fprintf(stderr, "git-flume: %s: %v\n", args[0], err)
		return 1
	}
	io.WriteString(stdout, res.Stdout)
	io.WriteString(stderr, res.Stderr)
	return res.Code
}

// await waits for the answer to request id of inbox.
func await(ctx context.Context, inbox, id string) (Result, error) {
	req, taken, resPath := filepath.Join(inbox, id+reqSuffix), filepath.Join(inbox, id+takenSuffix), filepath.Join(inbox, id+resSuffix)
	since := time.Now()
	for {
		if data, err := readFile(resPath, maxAnswer); err == nil {
			_ = os.Remove(resPath)
			var res Result
			if err := json.Unmarshal(data, &res); err != nil {
				return res, fmt.Errorf("the watcher's answer does not read: %w", err)
			}
			return res, nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			// There, and not an answer to read: waiting would not change it.
			return Result{}, fmt.Errorf("the watcher's answer cannot be read: %w", err)
		}
		if _, err := os.Lstat(req); err == nil && time.Since(since) > untakenFor {
			if os.Remove(req) == nil {
				return Result{}, fmt.Errorf("no watcher took it within %s: the place's watcher is not running (FLUME_WATCH=off?); a git flume command outside the sandbox starts one", untakenFor)
			}
		}
		if pid := takenBy(taken); pid > 0 && !proc.Alive(pid) {
			if _, err := os.Lstat(resPath); err != nil {
				return Result{}, fmt.Errorf("the watcher that ran it (pid %d) ended before it answered: what it did is unknown; see git flume status before running it again", pid)
			}
		}
		select {
		case <-ctx.Done():
			return Result{}, ctx.Err()
		case <-time.After(answerPoll):
		}
	}
}
