// Package git is the one place git-flume runs git. All shell-to-git
// interactions go through it; no other package imports os/exec for git.
//
// Callers say what they mean (repo.ListRefs, repo.UpdateRefs) and never build
// argv. Every child process gets a clean environment (SPEC R9): the GIT_DIR
// family that a calling hook may have exported is removed, read-only calls set
// GIT_OPTIONAL_LOCKS=0, revisions follow --end-of-options, and "not found" is
// read from exit status, never from stderr text.
package git
