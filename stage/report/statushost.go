// Host-wide status (seed 002): every repository this host launched places in.

package report

import (
	"context"
	"errors"
	"os"

	"github.com/git-flume/git-flume/stage"
)

// HostStatus is every place of every repository this host launched places
// in (status --host): one entry per indexed main checkout, in the order
// listed, each read as status reads one repository. A repository that
// cannot be read says why and the others are still read.
type HostStatus struct {
	Schema       int          `json:"schema"`
	Repositories []RepoStatus `json:"repositories"`
}

// RepoStatus is one repository's part of a HostStatus.
type RepoStatus struct {
	Repo   string  `json:"repo"`
	Status *Status `json:"status"`
	Error  string  `json:"error,omitempty"`
}

// ReadHostStatus reads the status of every repository in the host's index
// (the user's global flume.repository values). It writes nothing: a
// repository gone from disk is reported, never dropped from the index.
func ReadHostStatus(ctx context.Context, env *stage.Env, all bool) (*HostStatus, error) {
	repos, err := env.Runner.GlobalConfigAll(ctx, stage.RepositoryKey)
	if err != nil {
		return nil, err
	}
	hs := &HostStatus{Schema: 1, Repositories: []RepoStatus{}}
	seen := map[string]bool{}
	for _, r := range repos {
		if seen[r] {
			continue
		}
		seen[r] = true
		rs := RepoStatus{Repo: r}
		if _, err := os.Stat(r); errors.Is(err, os.ErrNotExist) {
			rs.Error = "its folder is gone (git config --global --unset flume.repository " + r + " forgets it)"
		} else if st, err := ReadStatus(ctx, env, StatusOptions{Repo: r, All: all}); err != nil {
			rs.Error = err.Error()
		} else {
			rs.Status = st
		}
		hs.Repositories = append(hs.Repositories, rs)
	}
	return hs, nil
}
