// Package lockfile takes advisory flock locks on files. The kernel drops a
// flock when its holder dies, so a killed holder never leaves one stale.
package lockfile
