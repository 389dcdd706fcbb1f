// Package ondisk reads git's own files in process, as git does: objects
// (loose ones, and pack files mapped, their index searched, deltas applied
// here), loose refs and packed-refs, worktrees' small files. It writes two
// things: loose objects (through a temporary file renamed into place) and
// a new worktree's administrative files, as `git worktree add` writes them
// (LinkWorktree). It never moves a ref (R2: refs move only through git):
// the one ref it writes is the HEAD of a worktree folder it made just now,
// which no one else can hold. Only the files backend of a SHA-1 repository
// is its to read; anything unexpected is a "no", and the caller then asks
// git.
package ondisk
