// Package broker carries a sandboxed agent's flume verbs to the place's
// watcher, outside the sandbox (A12). A role that delegates has
// its agent launch, wait for, accept, reopen, unblock and roll back
// delegated places: each writes flume's records, git's worktree folders
// and starts panes, none of which the agent's sandbox lets it write.
//
// The agent's run gets an inbox, a folder only its own sandbox may write
// ($FLUME_INBOX). git-flume started inside the sandbox with one of those
// verbs writes its arguments there as a request and waits for the answer
// (Forward). The place's watcher serves the inbox (Server): it runs each
// request as git-flume, as the agent of the inbox's place (the caller is
// known by where the kernel let it write, never by what it says), and
// writes back the exit status and output. Everything in the inbox is the
// agent's and read as hostile: no link is followed, no file but a regular
// one read, sizes bounded; only the verbs above run, never with --repo.
package broker
