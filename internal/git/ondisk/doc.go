// Package objfile reads and writes git's object files in process, as git
// does: loose objects written (a temporary file renamed into place) and
// read, pack files read (mapped, their index searched, deltas applied
// here). It never touches a ref (R2: refs move only through git). Only
// SHA-1 repositories are its to read; anything unexpected is an error, and
// the caller then asks git.
package ondisk
