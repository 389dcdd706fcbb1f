// Package report holds every view and rendering for people: status (its
// JSON document and its table), explain, the HTML export, a
// delegation's children, what tidy did or kept, a workspace request's
// status, what a launch made, what doctor found, what a sync moved. It
// only reads: nothing here moves a ref or touches a worktree, so any view
// may run beside any command (R8's release of a dead claim is the one
// write status makes, and it is stage's).
package report
