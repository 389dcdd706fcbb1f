package stage

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// Folders are the folders of the place a role's path rules deny, as its
// agent's own view of the machine holds them for every tool, a shell's
// too (A12): hidden (shown empty and read-only) where a rule denies
// reading, read-only where rules deny writing or editing alone. Each is
// relative to the place. Only a rule that denies a whole folder
// (FOLDER/**, FOLDER a plain relative path) can be held so, and only when
// no earlier rule allows some of it: any other deny is an error naming
// the rule, and the role is then refused, never held by the guard alone.
func (r *Role) Folders() (hidden, readOnly []string, err error) {
	for i, p := range r.PathRestrictions {
		if p.Deny == "" {
			continue
		}
		dir, ok := strings.CutSuffix(p.Deny, "/**")
		if !ok || !plainFolder(dir) {
			return nil, nil, fmt.Errorf("rule %q: a rule is held for a shell only over a whole folder (FOLDER/**)", p.String())
		}
		for _, q := range r.PathRestrictions[:i] {
			if q.Allow != "" && sharesOps(p, q) && reaches(q.Allow, dir) {
				return nil, nil, fmt.Errorf("rule %q: the earlier rule %q allows some of %s, which a folder's rule cannot hold", p.String(), q.String(), dir)
			}
		}
		switch {
		case p.covers(OpRead):
			hidden = append(hidden, dir)
		case !slices.Contains(readOnly, dir):
			readOnly = append(readOnly, dir)
		}
	}
	// what a hidden folder holds is hidden with it
	within := func(d string) bool {
		return slices.ContainsFunc(hidden, func(h string) bool { return d != h && strings.HasPrefix(d+"/", h+"/") })
	}
	hidden = slices.DeleteFunc(hidden, within)
	readOnly = slices.DeleteFunc(readOnly, func(d string) bool { return slices.Contains(hidden, d) || within(d) })
	return hidden, readOnly, nil
}

// plainFolder reports whether dir names a folder inside a place by a
// plain relative path: no glob, no "..", not git's own.
func plainFolder(dir string) bool {
	return dir != "" && !strings.ContainsAny(dir, "*?[]{}\\") && path.Clean(dir) == dir && !path.IsAbs(dir) &&
		dir != "." && dir != ".." && !strings.HasPrefix(dir, "../") && dir != ".git" && !strings.HasPrefix(dir, ".git/")
}

// sharesOps reports whether rules p and q are about an operation both.
func sharesOps(p, q PathRule) bool {
	return len(p.Ops) == 0 || len(q.Ops) == 0 || slices.ContainsFunc(p.Ops, q.covers)
}

// reaches reports whether glob may match a path inside folder dir: its
// part before any wildcard leads into dir, or dir into it.
func reaches(glob, dir string) bool {
	lit := glob
	if i := strings.IndexAny(glob, "*?[{"); i >= 0 {
		lit = glob[:i]
	}
	return strings.HasPrefix(dir+"/", lit) || strings.HasPrefix(lit, dir+"/")
}
