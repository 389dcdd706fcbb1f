// A runnable place as its record keeps it: what a place was given, and
// the variables its steps and agents see. stage/runenv sets it up from
// [run] (stage.RunDecl).

package record

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// RunSetup is what a place was given to run: its ports, the
// lease that holds them, its env files as copied.
type RunSetup struct {
	Ports map[string]int `json:"ports,omitempty"`
	Lease string         `json:"lease,omitempty"`
	Env   []EnvFile      `json:"env,omitempty"`
	// Deps is how it got its dependency folders, nil when it has none.
	Deps *DepsSetup `json:"deps,omitempty"`
	// Compose are the variables given its compose project name.
	Compose []string `json:"compose,omitempty"`
	// Unfinished: the place was made, and what [run] declares is not
	// set up yet (a launch cut during its setup, or one that failed:
	// Failed says why). Retry, env --refresh and any stage's start finish
	// it.
	Unfinished bool   `json:"unfinished,omitempty"`
	Failed     string `json:"failed,omitempty"`
}

// EnvFile is an env file copied into a place: its path (relative), or why
// it was not copied. No digest of what was copied: the record is shared,
// and a digest of a secret is something to test guesses against (issue
// 42).
type EnvFile struct {
	Path    string `json:"path"`
	Skipped string `json:"skipped,omitempty"`
}

// ComposeName is a place's compose project name: the repository's folder
// name, the place, and a short hash of the repository's path, so that two
// repositories with a place of the same name never share a project, its
// containers or its volumes. Lowercase letters, digits, '-' and '_', as
// compose requires.
func ComposeName(p *Place) string {
	sum := sha256.Sum256([]byte(p.Repo))
	base := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '_'
	}, filepath.Base(p.Repo)+"-"+p.ID)
	return strings.TrimLeft(base, "-_") + "-" + hex.EncodeToString(sum[:3])
}

// RunVars are a place's run variables as NAME=value, for a place whose
// repository declares [run]: its compose name under COMPOSE_PROJECT_NAME
// and every other variable the repository names, then its ports, in a
// stable order.
func RunVars(p *Place) []string {
	if p.Run == nil {
		return nil // its repository declares no [run]
	}
	vars := []string{"COMPOSE_PROJECT_NAME=" + ComposeName(p)}
	for _, name := range p.Run.Compose {
		if name != "COMPOSE_PROJECT_NAME" {
			vars = append(vars, name+"="+ComposeName(p))
		}
	}
	names := make([]string, 0, len(p.Run.Ports))
	for name := range p.Run.Ports {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		vars = append(vars, fmt.Sprintf("%s=%d", name, p.Run.Ports[name]))
	}
	return vars
}

// DepsSetup is how a place got its dependency folders.
type DepsSetup struct {
	Key     string   `json:"key"`
	Folders []string `json:"folders"`
	// Method is "reflink" (cloned copy-on-write from the template),
	// "copy" (copied in full from it) or "install" (installed in the
	// place itself: the template was refused, Refused says why).
	Method string `json:"method"`
	// Built: this setup built the template (its install ran, in a
	// checkout of the place's base no branch controls).
	Built   bool   `json:"built,omitempty"`
	Refused string `json:"refused,omitempty"`
	// Kept are the folders left as the place has them, with why (its
	// branch tracks one, one lies below a link).
	Kept []string `json:"kept,omitempty"`
}
