package place

import "github.com/git-flume/git-flume/stage"

// Places are the places' use cases for one command, in its repository
// opened once (stage.Repository): launch, advance, tidy, drop, the
// claims, share, the hooks and the watcher. The engine's steps they run
// take the same repository.
type Places struct {
	r *stage.Repository
}

// New are the places' use cases in repository r.
func New(r *stage.Repository) *Places { return &Places{r: r} }
