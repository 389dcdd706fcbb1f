// A repository's [run] section: what each runnable place is given.

package stage

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// RunDecl is a repository's [run] section.
type RunDecl struct {
	// Env are globs of ignored files, relative to the main checkout,
	// copied into each new place (mode 0600).
	Env []string
	// Ports are the variables each place gets a port of its own for.
	Ports []string
	// PortsFrom is the first port blocks are leased from.
	PortsFrom int
	// Compose are variables given the place's compose project name,
	// besides COMPOSE_PROJECT_NAME, which every place gets.
	Compose []string
	// Deps are ignored folders (node_modules, .venv, target) each place
	// gets a clone of, from a template built once per key by DepsInstall
	// (a shell line) and keyed also by the content of DepsKey's files.
	Deps        []string
	DepsKey     []string
	DepsInstall string
}

// Declared reports a [run] section that gives places anything.
func (d RunDecl) Declared() bool {
	return len(d.Env) > 0 || len(d.Ports) > 0 || len(d.Compose) > 0 || len(d.Deps) > 0
}

// DefaultPortsFrom is where port blocks start unless [run] portsFrom says.
const DefaultPortsFrom = 20000

// MaxPort bounds the port blocks.
const MaxPort = 65000

// IsVarName reports a name a shell takes for an environment variable:
// a letter or _, then letters, digits and _.
func IsVarName(s string) bool {
	for i, c := range []byte(s) {
		if !(c == '_' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return s != ""
}

// apply takes one key of the [run] section.
func (d *RunDecl) apply(name, value string) error {
	switch name {
	case "env":
		if filepath.IsAbs(value) || strings.Contains(filepath.ToSlash(value), "..") {
			return fmt.Errorf("run.env %q: a path inside the repository, relative to it", value)
		}
		d.Env = append(d.Env, value)
	case "port", "compose":
		if !IsVarName(value) {
			return fmt.Errorf("run.%s %q: not an environment variable's name", name, value)
		}
		if name == "port" {
			d.Ports = append(d.Ports, value)
		} else {
			d.Compose = append(d.Compose, value)
		}
	case "deps", "depskey":
		if filepath.IsAbs(value) || strings.Contains(filepath.ToSlash(value), "..") || value == "" {
			return fmt.Errorf("run.%s %q: a path inside the repository, relative to it", name, value)
		}
		if name == "deps" {
			d.Deps = append(d.Deps, filepath.Clean(value))
		} else {
			d.DepsKey = append(d.DepsKey, value)
		}
	case "depsinstall":
		d.DepsInstall = value
	case "portsfrom":
		n, err := strconv.Atoi(value)
		if err != nil || n < 1024 || n > MaxPort {
			return fmt.Errorf("run.portsFrom %q: a port from 1024 to %d", value, MaxPort)
		}
		d.PortsFrom = n
	}
	return nil
}
