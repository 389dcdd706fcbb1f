// Package ondisk reads git's own files in process, as git does: objects
// (loose ones, and pack files mapped, their index searched, deltas applied
// here), loose refs and packed-refs, worktrees' small files; go-git
// encodes and decodes the objects (blob, flat tree, commit). Storer is one
// repository's, the in-process side of internal/git's storer boundary. It
// writes one thing: loose objects (through a temporary file renamed into
// place). It never writes a ref nor a worktree's metadata: git does (R2).
// Only the files backend of a SHA-1 repository is its to read; anything
// unexpected is a "no", and the caller then asks git.
package ondisk
