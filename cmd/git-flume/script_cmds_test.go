package main

import (
	"os"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// scriptCmds are the custom testscript commands, documented in
// testdata/script/README.md.
var scriptCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	"at": cmdAt,
}

// at DATE: fix the author and committer date of the commits that follow.
func cmdAt(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: at DATE")
	}
	ts.Setenv("GIT_AUTHOR_DATE", args[0])
	ts.Setenv("GIT_COMMITTER_DATE", args[0])
	ts.Setenv("FLUME_NOW", args[0])
}

func init() {
	scriptCmds["putrecord"] = cmdPutRecord
}

// putrecord REF FILE: store FILE as the state.json of a new state commit at
// REF with raw git plumbing, bypassing git-flume's checks, so that scripts
// can plant records flume itself would refuse to write.
func cmdPutRecord(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: putrecord REF FILE")
	}
	git := func(args ...string) string {
		ts.Check(ts.Exec("git", args...))
		return strings.TrimSpace(ts.ReadFile("stdout"))
	}
	blob := git("hash-object", "-w", ts.MkAbs(args[1]))
	index := ts.MkAbs(".putrecord-index")
	ts.Setenv("GIT_INDEX_FILE", index)
	git("update-index", "--add", "--cacheinfo", "100644,"+blob+",state.json")
	tree := git("write-tree")
	ts.Setenv("GIT_INDEX_FILE", "")
	ts.Check(os.Remove(index))
	commit := git("commit-tree", "-m", "planted by putrecord", tree)
	git("update-ref", args[0], commit)
}
