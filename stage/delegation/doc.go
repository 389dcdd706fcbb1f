// Package delegation holds the commissioner's verbs on a delegated place:
// accept, reopen, unblock, rollback. Each reads, decides and
// writes by CAS, and each can be run again after an interruption: it goes
// on from what the records and git show.
package delegation
