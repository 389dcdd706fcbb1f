// Package inputs keeps what a promotion request's checks run against
// fixed. Each input file is read once and a private read-only copy of
// those very bytes is kept, named by its content id; before validation and
// promotion the source and the copy are both checked to hold them still
// (SPEC P2). The package.json test script is read as committed at the
// base, so that dirty files of a main checkout cannot change it (P4).
package inputs
