// Command mutate checks that the tests notice a broken clause (issue 65):
// for each one-line change in mutations.txt it copies the tree, makes the
// change in the copy, runs the tests that cite the clause, and says
// whether they caught it. A change whose line is no longer in its file
// exactly once is reported stale, never skipped silently.
//
//	go run ./internal/mutate [-list] [CLAUSE...]    (scripts/mutate)
//
// It runs outside make test: each change runs its tests again, minutes
// in all.
package main
