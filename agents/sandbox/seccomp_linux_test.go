package sandbox

import (
	"encoding/binary"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"testing"

	"github.com/git-flume/git-flume/internal/sidedoor"
	"golang.org/x/sys/unix"
)

// runFilter runs a classic BPF seccomp program over seccomp_data made of
// nr, arch and the call's arguments, as the kernel would, and returns its
// verdict. It knows the instructions the filter uses.
func runFilter(t *testing.T, prog []unix.SockFilter, nr int32, arch uint32, args ...uint64) uint32 {
	t.Helper()
	data := make([]byte, 64)
	binary.LittleEndian.PutUint32(data[0:], uint32(nr))
	binary.LittleEndian.PutUint32(data[4:], arch)
	for i, a := range args {
		binary.LittleEndian.PutUint64(data[16+8*i:], a)
	}
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			acc = binary.LittleEndian.Uint32(data[in.K:])
		case unix.BPF_ALU | unix.BPF_AND | unix.BPF_K:
			acc &= in.K
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K:
			yes := acc == in.K
			if in.Code&0xf0 == unix.BPF_JGE {
				yes = acc >= in.K
			}
			if yes {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case unix.BPF_JMP | unix.BPF_JA:
			pc += int(in.K)
		case unix.BPF_RET | unix.BPF_K:
			return in.K
		default:
			t.Fatalf("instruction %d: unknown code %#x", pc, in.Code)
		}
	}
	t.Fatal("the program ran off its end")
	return 0
}

// TestSideDoorsRefusedOnEveryArchitecture_A13: the filter refuses each
// side door on each architecture it names and lets every neighbouring
// call through, whatever this machine runs. The numbers are the
// kernel's own, written out, not the filter's constants.
func TestSideDoorsRefusedOnEveryArchitecture_A13(t *testing.T) {
	prog := filter()
	errno := func(e unix.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e) }
	allow := uint32(unix.SECCOMP_RET_ALLOW)
	const x86, arm, i386 = 0xc000003e, 0xc00000b7, 0x40000003
	for _, c := range []struct {
		name string
		nr   int32
		arch uint32
		args []uint64
		want uint32
	}{
		{"x86-64 unix socket", 41, x86, []uint64{unix.AF_UNIX}, errno(unix.EACCES)},
		{"x86-64 inet socket", 41, x86, []uint64{unix.AF_INET}, allow},
		{"x86-64 unix stream pair", 53, x86, []uint64{unix.AF_UNIX, unix.SOCK_STREAM | unix.SOCK_CLOEXEC}, allow},
		{"x86-64 unix datagram pair", 53, x86, []uint64{unix.AF_UNIX, unix.SOCK_DGRAM | unix.SOCK_CLOEXEC}, errno(unix.EACCES)},
		{"x86-64 unix seqpacket pair", 53, x86, []uint64{unix.AF_UNIX, unix.SOCK_SEQPACKET}, errno(unix.EACCES)},
		{"x86-64 io_uring_setup", 425, x86, nil, errno(unix.ENOSYS)},
		{"x86-64 io_uring_enter", 426, x86, nil, errno(unix.ENOSYS)},
		{"x86-64 io_uring_register", 427, x86, nil, errno(unix.ENOSYS)},
		{"x86-64 TIOCSTI", 16, x86, []uint64{0, 0x5412}, errno(unix.EPERM)},
		{"x86-64 TIOCLINUX", 16, x86, []uint64{0, 0x541c}, errno(unix.EPERM)},
		{"x86-64 TIOCGWINSZ", 16, x86, []uint64{0, 0x5413}, allow},
		{"x86-64 TIOCSTI in the high word only", 16, x86, []uint64{0, 0x5412 << 32}, allow},
		{"x86-64 keyctl", 250, x86, nil, errno(unix.EPERM)},
		{"x86-64 add_key", 248, x86, nil, errno(unix.EPERM)},
		{"x86-64 request_key", 249, x86, nil, errno(unix.EPERM)},
		{"x86-64 ptrace attach", 101, x86, []uint64{16}, errno(unix.EPERM)},
		{"x86-64 ptrace seize", 101, x86, []uint64{0x4206}, errno(unix.EPERM)},
		{"x86-64 ptrace traceme", 101, x86, []uint64{0}, allow},
		{"x86-64 write", 1, x86, []uint64{unix.AF_UNIX, 0x5412}, allow},
		{"x32 anything", 0x40000000 | 41, x86, []uint64{unix.AF_INET}, errno(unix.ENOSYS)},
		{"arm64 unix socket", 198, arm, []uint64{unix.AF_UNIX}, errno(unix.EACCES)},
		{"arm64 inet6 socket", 198, arm, []uint64{unix.AF_INET6}, allow},
		{"arm64 unix stream pair", 199, arm, []uint64{unix.AF_UNIX, unix.SOCK_STREAM}, allow},
		{"arm64 unix datagram pair", 199, arm, []uint64{unix.AF_UNIX, unix.SOCK_DGRAM}, errno(unix.EACCES)},
		{"arm64 io_uring_setup", 425, arm, nil, errno(unix.ENOSYS)},
		{"arm64 TIOCSTI", 29, arm, []uint64{1, 0x5412}, errno(unix.EPERM)},
		{"arm64 keyctl", 219, arm, nil, errno(unix.EPERM)},
		{"arm64 ptrace attach", 117, arm, []uint64{16}, errno(unix.EPERM)},
		{"arm64 write", 64, arm, nil, allow},
		{"i386 unix socket", 359, i386, []uint64{unix.AF_UNIX}, errno(unix.EACCES)},
		{"i386 inet socket", 359, i386, []uint64{unix.AF_INET}, allow},
		{"i386 socketcall SYS_SOCKET", 102, i386, []uint64{1}, errno(unix.EACCES)},
		{"i386 socketcall SYS_SOCKETPAIR", 102, i386, []uint64{8}, errno(unix.EACCES)},
		{"i386 socketcall SYS_CONNECT", 102, i386, []uint64{3}, allow},
		{"i386 io_uring_setup", 425, i386, nil, errno(unix.ENOSYS)},
		{"i386 TIOCSTI", 54, i386, []uint64{0, 0x5412}, errno(unix.EPERM)},
		{"i386 keyctl", 288, i386, nil, errno(unix.EPERM)},
		{"another architecture", 41, 0xc00000f3, []uint64{unix.AF_INET}, errno(unix.ENOSYS)},
	} {
		if got := runFilter(t, prog, c.nr, c.arch, c.args...); got != c.want {
			t.Errorf("%s: verdict %#x, want %#x", c.name, got, c.want)
		}
	}
}

// TestNativeNumbersAreTheKernels: this machine's own numbers for the
// calls refused agree with the table's.
func TestNativeNumbersAreTheKernels(t *testing.T) {
	native := map[string]int{"socket": unix.SYS_SOCKET, "socketpair": unix.SYS_SOCKETPAIR, "ioctl": unix.SYS_IOCTL,
		"io_uring_setup": unix.SYS_IO_URING_SETUP, "keyctl": unix.SYS_KEYCTL, "add_key": unix.SYS_ADD_KEY, "ptrace": unix.SYS_PTRACE}
	table := map[string]call{"socket": sysSocket, "socketpair": sysSocketpair, "ioctl": sysIoctl,
		"io_uring_setup": sysIOURingSetup, "keyctl": sysKeyctl, "add_key": sysAddKey, "ptrace": sysPtrace}
	for name, nr := range native {
		c := table[name]
		want := c.x86_64
		if runtime.GOARCH == "arm64" {
			want = c.aarch64
		}
		if want != nr {
			t.Errorf("%s: the table says %d, this machine %d", name, want, nr)
		}
	}
}

// sideDoorHelper is the child of TestSideDoorsRefusedByTheFilterAlone:
// with the filter or without it (SANDBOX_SIDE_DOORS=off), it prints each probe's
// result.
func sideDoorHelper() int {
	// Its terminal hangs up when it closes.
	signal.Ignore(unix.SIGHUP)
	if os.Getenv("SANDBOX_SIDE_DOORS") == "filter" {
		if err := refuseSideDoors(); err != nil {
			os.Stdout.WriteString("enter: " + err.Error() + "\n")
			return 1
		}
	}
	for what, err := range sidedoor.Probes() {
		res := "ok"
		if err != nil {
			res = "refused: " + err.Error()
		}
		os.Stdout.WriteString(what + ": " + res + "\n")
	}
	return 0
}

// TestSideDoorsRefusedByTheFilterAlone_A13: behind the seccomp filter
// alone (no Landlock, no namespaces) io_uring, a Unix socket, a datagram
// pair, the keyrings and TIOCSTI are refused while a stream pair still
// works. Each probe is also run without the filter, in a session of its
// own: where it gets through there, the refusal is the filter's.
func TestSideDoorsRefusedByTheFilterAlone_A13(t *testing.T) {
	results := func(mode string) map[string]string {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "SANDBOX_SIDE_DOORS="+mode)
		cmd.SysProcAttr = &unix.SysProcAttr{Setsid: true}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("helper (%s): %v\n%s", mode, err, out)
		}
		got := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if what, res, ok := strings.Cut(line, ": "); ok {
				got[what] = res
			}
		}
		return got
	}
	with, without := results("filter"), results("off")
	want := map[string]string{
		"io_uring":               "refused: function not implemented",
		"unix socket":            "refused: permission denied",
		"datagram pair":          "refused: permission denied",
		"keyctl":                 "refused: operation not permitted",
		"typing into a terminal": "refused: operation not permitted",
		"stream pair":            "ok",
	}
	for what, res := range want {
		if with[what] != res {
			t.Errorf("behind the filter, %s: %q, want %q", what, with[what], res)
		}
		if without[what] == "ok" {
			continue
		}
		// The probe must reach the kernel, or the test shows nothing of
		// the filter's; only TIOCSTI may be the kernel's own refusal.
		if what == "typing into a terminal" && !legacyTIOCSTI() {
			t.Logf("this kernel refuses TIOCSTI by itself (dev.tty.legacy_tiocsti=0)")
			continue
		}
		t.Errorf("without the filter, %s: %q, want ok", what, without[what])
	}
}

// legacyTIOCSTI reports a kernel that lets TIOCSTI through
// (dev.tty.legacy_tiocsti, Linux 6.2; older kernels always do).
func legacyTIOCSTI() bool {
	b, err := os.ReadFile("/proc/sys/dev/tty/legacy_tiocsti")
	return err != nil || strings.TrimSpace(string(b)) == "1"
}
