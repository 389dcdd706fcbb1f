// Package gitconfig reads git-config files in process, as git's own
// parser does, and the NUL-separated list `git config -z --list` prints.
// It gives up on anything it does not read exactly as git does, and the
// caller then asks git.
package gitconfig
