package record

import (
	"os"
	"testing"

	"github.com/git-flume/git-flume/internal/proc"
)

// TestAProcIsItsPidAndStartTime_A7: a lease names one process, never a
// later one given the same pid. On a host whose pids wrap (32,768 here,
// spent by a test suite's git commands) or after a reboot, a dead
// watcher's pid names another process: read by pid alone, its lease was
// held for ever and its place went unwatched.
func TestAProcIsItsPidAndStartTime_A7(t *testing.T) {
	start, ok := proc.Started(os.Getpid())
	if !ok || start == "" {
		t.Fatalf("this process's start time: %q, %v", start, ok)
	}
	for _, c := range []struct {
		p    Proc
		want bool
	}{
		{Proc{PID: os.Getpid(), Host: "h", Start: start}, true},
		{Proc{PID: os.Getpid(), Host: "h", Start: start + "1"}, false}, // the pid given to another
		{Proc{PID: os.Getpid(), Host: "h"}, true},                      // a record of an earlier version
		{Proc{PID: 0, Host: "h"}, false},
		{Proc{PID: os.Getpid(), Host: "elsewhere", Start: "1"}, true}, // its own host judges
	} {
		if got := c.p.Alive("h"); got != c.want {
			t.Errorf("%+v alive on h: %v, want %v", c.p, got, c.want)
		}
	}
}
