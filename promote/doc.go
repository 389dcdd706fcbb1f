// Package promote moves checked tips onto the main branches of several
// repositories, serially and never atomically (SPEC P6, P7): before a
// repository moves its intent is saved; its receipt is saved before the
// next one can move; every target is checked again between moves; an
// interrupted promotion is reconciled from evidence only, and no proven
// move is ever repeated.
//
// Each member repository keeps its own record at
// refs/flume/workspaces/<id>: its branch, base, tip, state and receipt. The
// chain of that record is the member's audit log.
package promote
