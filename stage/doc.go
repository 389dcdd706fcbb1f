// Package stage holds what every workflow carries besides a place's record
// (stage/record): the repository's .flume/config with its kinds, roles and
// [run] section, the Env of a command, the engine's and the verbs'
// options, readying, the locks a repository's workflows share, and the
// checks made before flume acts on a place here (CheckHome).
//
// The workflows sit above it: stage/engine moves stages, stage/place makes,
// follows and tidies places, stage/delegation resolves delegated places,
// stage/report shows them, stage/cost prices their runs, stage/runenv gives
// a runnable place its ports and files, stage/radar predicts conflicts.
package stage
