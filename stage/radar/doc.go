// Package radar predicts which pieces of work would conflict if merged.
// Where both commits are at hand, git merge-tree answers
// exactly; where one is only known from a record (a place of another host,
// shared by sync), a fingerprint of each change — the paths it touches and
// the lines of its base it replaces, over its commits and its uncommitted
// work — answers without the code: two changes of one base that touch the
// same or adjacent lines of a file are predicted to conflict; of different
// bases, two that touch one file.
package radar
