// Package cliargs reads a command line as git does before urfave/cli sees
// it: a command's flags are taken wherever they stand among its arguments.
package cliargs
