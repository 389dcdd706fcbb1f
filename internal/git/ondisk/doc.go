// Package ondisk reads git's own files in process, as git does, and writes
// loose objects: objects (loose files written through a temporary file
// renamed into place, and read; pack files mapped, their index searched,
// deltas applied here), loose refs and packed-refs, a worktree's small
// files. It never writes a ref (R2: refs move only through git). Only the
// files backend of a SHA-1 repository is its to read; anything unexpected
// is a "no", and the caller then asks git.
package ondisk
