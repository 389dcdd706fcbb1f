// Package record is a place's record at refs/flume/places/<kind>--<name>,
// whole and alone: the place, its stages and their agent runs, its
// delegation, its readying, what a runnable place was given, how it was
// tidied, its change's fingerprint; the checks that treat every such
// record as untrusted input (R5); and the typed reads and CAS edits of it
// (R2). It depends on refs and the run lifecycle (agents/run) and on
// nothing that opens a repository, reads a configuration or starts a
// process, so a store in memory (refs.NewMemory) carries it whole.
//
// Every workflow reads it: stage (a repository's configuration and the
// Env every command carries) and the packages below stage.
package record
