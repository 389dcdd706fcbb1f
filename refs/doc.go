// Package refs is git-flume's state store: every mutable entity is one ref
// under refs/flume/ pointing at a commit chain whose tip's tree holds the
// entity's full record in state.json (SPEC R1). The chain is the entity's
// history; `git log <ref>` is its audit trail.
//
// Every move is a compare-and-swap through `git update-ref -z --stdin`
// naming the commit the writer read (R2); a lost race is a *ConflictError and
// Edit re-reads, re-decides and retries with jittered back-off.
package refs
