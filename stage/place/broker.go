// The watcher serves its agent's inbox (A12): the delegation
// verbs a sandboxed agent hands out run here, outside its sandbox, as that
// agent.

package place

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/git-flume/git-flume/agents/broker"
	"github.com/git-flume/git-flume/internal/proc"
	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/record"
)

// serveInbox serves the inbox of p's current run, if it has one, with s
// (nil or another run's: a new server, the old one closed) and returns
// the server now serving, nil for none.
func serveInbox(ctx context.Context, env *stage.Env, p *record.Place, s *broker.Server) *broker.Server {
	a := record.CurrentRun(p)
	inbox := ""
	if a != nil && !a.Ended {
		if info, err := os.Lstat(a.Inbox()); err == nil && info.IsDir() {
			inbox = a.Inbox()
		}
	}
	if s != nil && s.Inbox() != inbox {
		s.Close()
		s = nil
	}
	if inbox == "" {
		return nil
	}
	if s == nil {
		session, pid, stageName := a.Session, a.PID, p.Stages[p.Current].Name
		s = broker.NewServer(ctx, inbox, func(ctx context.Context, r broker.Request) broker.Result {
			return runBrokered(ctx, env, p.ID, p.Path, stageName, session, pid, r)
		})
	}
	s.Serve()
	return s
}

// runBrokered runs request r of the agent of place id as git-flume: in
// its working folder when that is inside the place (else the place's
// root), with the watcher's environment less flume's agent variables,
// plus the place and the agent's session (refs.BrokerVar), so the verb
// acts as that agent would.
func runBrokered(ctx context.Context, env *stage.Env, id, path, stageName, session string, pid int, r broker.Request) broker.Result {
	exe, err := os.Executable()
	if err != nil {
		return broker.Result{Code: 1, Stderr: fmt.Sprintf("git-flume: the place's watcher: %v\n", err)}
	}
	dir := path
	if d, err := filepath.EvalSymlinks(r.Dir); err == nil && filepath.IsAbs(r.Dir) {
		if root, err := filepath.EvalSymlinks(path); err == nil && (d == root || strings.HasPrefix(d, root+string(filepath.Separator))) {
			dir = d
		}
	}
	vars := append(stage.BackgroundEnv(env.CallerEnv), "FLUME_PLACE="+id, "FLUME_STAGE="+stageName, refs.BrokerVar+"="+session+" "+strconv.Itoa(pid))
	var out, errb bytes.Buffer
	code, err := proc.RunStep(ctx, proc.Cmd{Path: exe, Args: r.Args, Dir: dir, Env: vars, Stdout: &out, Stderr: &errb})
	if err != nil {
		code = 1
		fmt.Fprintf(&errb, "git-flume: %s ended unfinished: the place's watcher stopped (its run is over)\n", r.Args[0])
	}
	return broker.Result{Code: code, Stdout: out.String(), Stderr: errb.String()}
}
