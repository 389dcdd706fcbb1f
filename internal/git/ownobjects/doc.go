// Package ownobjects takes what an agent wrote in its own object folder
// into the repository's shared store (A13). The agent's git writes new
// objects only there (agents/sandbox); everything in the folder is the
// agent's and read as hostile: no link is followed, no file but a
// regular one read, and every loose object is hashed again and refused
// where its content is not what its name says. What is taken in goes
// through git's index-pack, which hashes and checks each object as fsck
// does; what was taken in is removed from the agent's folder, where its
// git then finds it in the shared store, and so is what was refused: it
// is said once, and the agent's git then finds the true object where it
// had planted another under its id.
package ownobjects
