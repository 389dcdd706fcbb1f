package place_test

import (
	"testing"

	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage/place"
)

// A name made from a brief is the brief's first words as R6 allows them.
func TestNameFromBrief_R6(t *testing.T) {
	for brief, want := range map[string]string{
		"Fix the login crash!":                  "fix-the-login-crash",
		"très spécial":                          "tres-special",
		"one two three four five":               "one-two-three-four",
		"internationalization localization now": "internationalization",
		"a-b-c-d-e":                             "a-b-c-d",
		"!!! ???":                               "",
		"Straße 42":                             "stra-e-42",
	} {
		got := place.NameFromBrief(brief)
		if got != want {
			t.Errorf("NameFromBrief(%q) = %q, want %q", brief, got, want)
		}
		if got != "" {
			if err := refs.ValidateName("name", got); err != nil {
				t.Errorf("NameFromBrief(%q) = %q: %v", brief, got, err)
			}
		}
	}
}
