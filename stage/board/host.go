// Host-wide status (seed 002): every repository this host launched places in.

package board

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/git-flume/git-flume/internal/term"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/report"
)

// Host is every place of every repository this host launched places
// in (status --host): one entry per indexed main checkout, in the order
// listed, each read as status reads one repository. A repository that
// cannot be read says why and the others are still read.
type Host struct {
	Schema       int    `json:"schema"`
	Repositories []Repo `json:"repositories"`
}

// Repo is one repository's part of a Host.
type Repo struct {
	Repo   string         `json:"repo"`
	Status *report.Status `json:"status"`
	Error  string         `json:"error,omitempty"`
}

// ReadHost reads the status of every repository in the host's index
// (S1; the user's global flume.repository values), all at once, within
// the engine's HostReadTimeout: one that cannot be read in it (a HEAD that
// blocks, a disk that hangs) is named, and the others print. It writes
// nothing: a repository gone from disk is reported, never dropped from
// the index. Cancelling ctx returns at
// once, whatever a read is stuck in.
func ReadHost(ctx context.Context, env *stage.Env, all bool) (*Host, error) {
	repos, err := env.Runner.GlobalConfigAll(ctx, stage.RepositoryKey)
	if err != nil {
		return nil, err
	}
	hs := &Host{Schema: 1, Repositories: []Repo{}}
	seen := map[string]bool{}
	var answers []chan Repo
	for _, r := range repos {
		if seen[r] {
			continue
		}
		seen[r] = true
		answer := make(chan Repo, 1)
		answers = append(answers, answer)
		go func() { answer <- readRepoStatus(ctx, env, r, all) }()
		hs.Repositories = append(hs.Repositories, Repo{Repo: r})
	}
	limit := env.Engine.HostReadTimeout()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	late := false
	for i, answer := range answers {
		if !late {
			select {
			case rs := <-answer:
				hs.Repositories[i] = rs
				continue
			case <-deadline.C:
				late = true
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		select {
		case rs := <-answer:
			hs.Repositories[i] = rs
		default:
			hs.Repositories[i].Error = fmt.Sprintf("not read within %s: a file of its repository does not answer (a FIFO, a hung disk?)", limit)
		}
	}
	return hs, nil
}

// readRepoStatus is one repository's part of the host's status.
func readRepoStatus(ctx context.Context, env *stage.Env, r string, all bool) Repo {
	rs := Repo{Repo: r}
	// Each repository's places are judged by its own host name: a
	// clone's own places were shown read-only by another's flume.host.
	if set, err := stage.ReadSettings(ctx, env.Runner, r); err == nil {
		if h := stage.HostName(env.CallerEnv, set); h != env.Host {
			own := *env
			own.Host = h
			env = &own
		}
	}
	if _, err := os.Stat(r); errors.Is(err, os.ErrNotExist) {
		rs.Error = "its folder is gone (git config --global --unset flume.repository " + r + " forgets it)"
	} else if st, err := report.ReadStatus(ctx, env, report.StatusOptions{Repo: r, All: all}); err != nil {
		rs.Error = err.Error()
	} else {
		rs.Status = st
	}
	return rs
}

// WriteHost prints hs as status --host shows it: each repository's
// path over its table (wide: every note), or why it could not be read.
func WriteHost(w io.Writer, hs *Host, wide bool) error {
	if len(hs.Repositories) == 0 {
		fmt.Fprintf(w, "no repository: this host has launched no place yet (the index is %s in your global git configuration)\n", stage.RepositoryKey)
		return nil
	}
	for i, r := range hs.Repositories {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s\n", term.Clean(r.Repo))
		if r.Error != "" {
			fmt.Fprintf(w, "  cannot be read: %s\n", term.Clean(r.Error))
			continue
		}
		if err := report.WriteStatusTable(w, r.Status, wide, 0); err != nil {
			return err
		}
	}
	return nil
}
