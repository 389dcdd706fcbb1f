// Package proc starts every program git-flume runs other than git (which
// internal/git runs, SPEC R9): repository steps, workspace checks, the pane
// host, git-flume's own detached background runs; and it answers whether a
// process still runs. No other package imports os/exec (a test says so), so
// the environment each kind of program gets is decided here, in one place.
package proc
