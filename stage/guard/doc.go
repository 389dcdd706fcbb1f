// Package guard judges one tool use of a place's agent before it happens
// (A9): a tool outside its stage role's tools, a write outside the place,
// a path a role's rule denies, or a command that names a claim's ref is
// refused with the rule named. Claude Code, Codex and pi call it from
// their hooks; the agent's sandbox (A12) holds the same rules for every
// other tool.
package guard
