// Package wait is a wait that ends early when files change: how a watcher
// hears its agent's hooks, its branch's reflog and its inbox between its
// steps, at the cost of a stat per file a quarter of a second.
package wait
