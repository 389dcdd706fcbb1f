// Package stage makes places, runs their stages and tidies them.
//
// A place is one launch's worktree at <repo>/places/<kind>--<name> on branch
// <kind>/<name>, with its record at refs/flume/places/<kind>--<name>. Every
// state change here is a read–decide–CAS-write on that record, so any
// command may be killed at any point and the next one finds a consistent
// place.
package stage
