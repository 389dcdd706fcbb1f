// Package runenv gives a runnable place what its repository's
// [run] declares: leased ports no other place holds (refs/flume/leases),
// env files copied in privately, dependency folders cloned from a
// template, and the environment its programs start with; tidy and drop
// stop what it started. What [run] declares and what a place was given
// are stage's (runplace.go).
package runenv
