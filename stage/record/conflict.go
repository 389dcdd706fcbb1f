package record

// Conflict is a predicted conflict of a place: with another open place,
// or with its target's tip ("target <branch>").
type Conflict struct {
	Place string   `json:"place"`
	With  string   `json:"with"`
	Files []string `json:"files"`
	// Exact: computed from both tips by git merge-tree; otherwise
	// predicted from the two places' fingerprints (one is another host's).
	Exact bool `json:"exact"`
}

// How says how a conflict was found, for a person.
func (c Conflict) How() string {
	if c.Exact {
		return "git merge-tree, exact"
	}
	return "from fingerprints, not exact"
}
