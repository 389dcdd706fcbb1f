// Package words holds the small text helpers messages for people share:
// counts, lists, first lines, a place's name indented in a tree.
package words
