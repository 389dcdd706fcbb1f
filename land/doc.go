// Package land is the lander (Q): a place's branch is submitted, its
// candidate (the branch merged onto the target's tip T) is made and
// checked in a throwaway worktree with the repository's declared checks,
// and the target moves to that candidate only from T, in the same
// transaction that records the proof. A target that moved meanwhile voids
// the proof; a red check or a conflict sends the entry back to its place.
// Every entry is a record at refs/flume/land/<place> moved by CAS.
package land
