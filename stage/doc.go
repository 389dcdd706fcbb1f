// Package stage holds what every workflow reads of a place: its record at
// refs/flume/places/<kind>--<name> (stages, agent runs, delegation,
// readying, the runnable part), the checks that treat a record as
// untrusted input (R5), the typed reads and CAS edits of it, the
// repository's .flume/config with its kinds and roles, and the Env that
// every command carries.
//
// The workflows sit above it: stage/engine moves stages, stage/place makes,
// follows and tidies places, stage/delegation resolves delegated places,
// stage/report shows them, stage/cost prices their runs, stage/runenv gives
// a runnable place its ports and files, stage/radar predicts conflicts.
package stage
