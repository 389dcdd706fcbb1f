// Package patch reads the unified diffs git prints: which files a change
// touches and which lines of each it replaces.
package patch
