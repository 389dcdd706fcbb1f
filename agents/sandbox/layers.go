package sandbox

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Layer is one of an agent's boundary's layers (A13) and whether this
// machine holds it: Why says what holds it, or why not.
type Layer struct {
	Name string `json:"name"`
	Held bool   `json:"held"`
	Why  string `json:"why"`
}

// Layer names, as doctor and a run's record print them.
const (
	LayerView     = "own view"
	LayerFilter   = "seccomp"
	LayerLandlock = "Landlock"
	LayerObjects  = "private objects"
)

// Layers are the boundary's layers on this machine, outermost first.
func Layers() []Layer {
	view := Layer{Name: LayerView, Held: true, Why: "a mount namespace of its own"}
	if os.Geteuid() != 0 {
		view.Why = "a user and a mount namespace of its own"
	}
	if why := ViewUnavailable(); why != "" {
		view.Held, view.Why = false, why
	}
	filter := Layer{Name: LayerFilter, Held: true, Why: "io_uring, Unix sockets, TIOCSTI, keyrings and ptrace attach refused"}
	if why := filterUnavailable(); why != "" {
		filter.Held, filter.Why = false, why
	}
	ll := Layer{Name: LayerLandlock, Held: true, Why: fmt.Sprintf("version %d: it writes only its place and its branch", LandlockABI())}
	if why := Unavailable(); why != "" {
		ll.Held, ll.Why = false, why
	}
	objects := Layer{Name: LayerObjects, Held: view.Held, Why: "new objects in a folder of its own, the shared store read-only in its view; flume hashes each again as it takes them in"}
	if !view.Held {
		objects.Why = "it needs its own view: an agent writes new objects into the repository's shared store"
	}
	return []Layer{view, filter, ll, objects}
}

// ViewUnavailable says why an agent cannot have its own view here, ""
// when it can: root needs CAP_SYS_ADMIN, another user a kernel that lets
// it make a user namespace.
func ViewUnavailable() string {
	if os.Geteuid() == 0 {
		if !hasCapability(21) { // CAP_SYS_ADMIN
			return "flume runs as root without CAP_SYS_ADMIN (in a container?), so it cannot make a mount namespace"
		}
		return ""
	}
	for _, s := range []struct{ file, off, why string }{
		{"/proc/sys/user/max_user_namespaces", "0", "user namespaces are off (user.max_user_namespaces = 0)"},
		{"/proc/sys/kernel/unprivileged_userns_clone", "0", "the kernel refuses user namespaces to users (kernel.unprivileged_userns_clone = 0)"},
		{"/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1", "AppArmor refuses user namespaces to unconfined programs (kernel.apparmor_restrict_unprivileged_userns = 1)"},
	} {
		if b, err := os.ReadFile(s.file); err == nil && strings.TrimSpace(string(b)) == s.off {
			return s.why
		}
	}
	if _, err := os.Stat("/proc/self/ns/user"); err != nil {
		return "this kernel has no user namespaces"
	}
	return ""
}

// hasCapability reports this process's effective set holding cap.
func hasCapability(c uint) bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && n&(1<<c) != 0
		}
	}
	return false
}

// filterUnavailable says why no seccomp filter can be entered here.
func filterUnavailable() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil || !strings.Contains(string(b), "\nSeccomp:") {
		return "this kernel has no seccomp"
	}
	return ""
}

// Held names the layers a sandbox entered holds, for a run's record:
// "own view, seccomp, Landlock, private objects".
func (s *Sandbox) Held() string {
	if s == nil {
		return ""
	}
	names := []string{LayerFilter, LayerLandlock}
	if s.View {
		names = append([]string{LayerView}, names...)
		if len(s.Objects) > 0 {
			names = append(names, LayerObjects)
		}
	}
	return strings.Join(names, ", ")
}
