// Package par runs independent steps of one command side by side.
package par
