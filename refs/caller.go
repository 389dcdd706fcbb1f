package refs

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/git-flume/git-flume/internal/proc"
)

// ForeignSessionError is a session named by a command that runs inside the
// process tree of an agent flume started, which acts only as its own (R8).
type ForeignSessionError struct{ Named, Agent string }

func (e *ForeignSessionError) Error() string {
	return fmt.Sprintf("session %s named inside the agent of session %s, which acts only as its own (R8)", e.Named, e.Agent)
}

// CallerSession is the session a command on host acts as (R8), vars its
// environment. Inside an agent flume started (an ancestor process carries
// its FLUME_SESSION, whatever this process's own environment says) it is
// that agent's session, kept alive by the agent process, not by the tool's
// shell that ran the command; naming another is a ForeignSessionError.
// Otherwise: the named session sid and pid when given, else
// $FLUME_SESSION and $FLUME_SESSION_PID, else the working directory and
// the caller's session leader (sessionPID).
func CallerSession(host, sid string, pid int, vars map[string]string) (Session, error) {
	s := Session{Host: host}
	agentSID, agentPID := agentSession()
	if agentSID == "" {
		agentSID, agentPID = brokered(vars)
	}
	if agentSID != "" {
		if sid != "" && sid != agentSID {
			return s, &ForeignSessionError{Named: sid, Agent: agentSID}
		}
		s.Key, s.Agent, s.PID = AgentKey(agentSID), agentSID, agentPID
		return s, nil
	}
	if sid == "" {
		sid = vars["FLUME_SESSION"]
	}
	if sid != "" {
		s.Key = "sid:" + sid
	} else {
		cwd, _ := os.Getwd()
		s.Key = "cwd:" + cwd
	}
	s.PID = pid
	if s.PID == 0 {
		s.PID, _ = strconv.Atoi(vars["FLUME_SESSION_PID"])
	}
	if s.PID == 0 {
		s.PID = sessionPID()
	}
	return s, nil
}

// BrokerVar carries, to a verb a place's watcher runs for its sandboxed
// agent (agent/broker), that agent's session and pid: "SESSION PID". It is
// read only where no ancestor is an agent's, and it only ever narrows
// what a command may do (an agent never takes over a claim).
const BrokerVar = "FLUME_BROKER"

// brokered is the agent session a watcher ran this command for, "" for
// none.
func brokered(vars map[string]string) (string, int) {
	sid, pidText, ok := strings.Cut(vars[BrokerVar], " ")
	pid, err := strconv.Atoi(pidText)
	if !ok || sid == "" || err != nil {
		return "", 0
	}
	return sid, pid
}

// agentSession finds the agent flume started whose process tree this
// command runs in: the FLUME_SESSION its nearest ancestor carries, and the
// topmost ancestor that carries the same (the agent itself, which lives as
// long as its session). "" when no ancestor carries one.
func agentSession() (string, int) {
	var sid string
	var top int
	for pid, n := os.Getppid(), 0; pid > 1 && n < 64; n++ {
		v, ok := proc.Getenv(pid, "FLUME_SESSION")
		if !ok || v == "" || (sid != "" && v != sid) {
			if sid != "" {
				break
			}
		} else {
			sid, top = v, pid
		}
		ppid, _, ok := proc.Parent(pid)
		if !ok {
			break
		}
		pid = ppid
	}
	return sid, top
}

// sessionPID is the process whose life the caller's claim shares (R8):
// the leader of its session (the terminal's or login shell, a
// tmux pane's, a cron job's), so a claim taken through a wrapper (sh -c,
// timeout, make) outlives the wrapper. Where the leader cannot be seen (a
// session begun outside this pid namespace, as in a container, or one
// whose leader exited) the outermost ancestor still in the session stands
// for it; where the leader is git or git-flume (setsid git flume use), the
// nearest ancestor that is neither.
func sessionPID() int {
	sid, err := unix.Getsid(0)
	if err == nil && sid > 1 && sid != os.Getpid() {
		if _, comm, ok := proc.Parent(sid); ok && !isGit(comm) {
			return sid
		}
	}
	if err == nil {
		if pid := outermostInSession(sid); pid > 0 {
			return pid
		}
	}
	pid := os.Getppid()
	for range 8 {
		ppid, comm, ok := proc.Parent(pid)
		if !ok || !isGit(comm) || ppid <= 1 {
			return pid
		}
		pid = ppid
	}
	return pid
}

// outermostInSession is the caller's farthest ancestor below init in
// session sid that is neither git nor git-flume, 0 when there is none.
func outermostInSession(sid int) int {
	best := 0
	for pid, n := os.Getppid(), 0; pid > 1 && n < 64; n++ {
		if s, err := unix.Getsid(pid); err != nil || s != sid {
			break
		}
		ppid, comm, ok := proc.Parent(pid)
		if !ok {
			break
		}
		if !isGit(comm) {
			best = pid
		}
		pid = ppid
	}
	return best
}

func isGit(comm string) bool { return comm == "git" || comm == "git-flume" }
