// Package place makes places, follows them and tidies them: launch (its
// preflight, the making record first, the worktree, readying, the first
// stage started and followed), advance of every place, the watcher's loop,
// tidy and drop, the conflict radar's refresh and land order, claims,
// hooks, sharing and doctor. Every change is a read–decide–CAS-write on a
// place's record (stage), so any command may be killed at any point and
// the next one finds a consistent place.
package place
