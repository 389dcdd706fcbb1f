// Package cost reads what each agent run used from its own transcript
// (W6): tokens, and dollars where the transcript records them or the
// configured prices give them; a cost neither recorded nor priced is
// unknown, never zero. Rows follow the places' tree, a delegating run
// carrying its children's share.
package cost
