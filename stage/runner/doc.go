// Package runner makes places on other machines (issue 45): a launch --on
// RUNNER leaves a launch order on the shared git remote and starts stock
// git flume where the runner says (over ssh, or by a command that reaches
// a cluster), which makes the place there and shares its record; this
// host learns of it only from the records sync brings, never by asking
// the other host.
package runner
