package sandbox

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

// runFilter runs a classic BPF seccomp program over seccomp_data made of
// nr, arch and the first argument, as the kernel would, and returns its
// verdict. It knows the instructions the filter uses.
func runFilter(t *testing.T, prog []unix.SockFilter, nr int32, arch uint32, arg0 uint64) uint32 {
	t.Helper()
	data := make([]byte, 64)
	binary.LittleEndian.PutUint32(data[0:], uint32(nr))
	binary.LittleEndian.PutUint32(data[4:], arch)
	binary.LittleEndian.PutUint64(data[16:], arg0)
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			acc = binary.LittleEndian.Uint32(data[in.K:])
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
		case unix.BPF_RET | unix.BPF_K:
			return in.K
		default:
			t.Fatalf("instruction %d: unknown code %#x", pc, in.Code)
		}
	}
	t.Fatal("the program ran off its end")
	return 0
}

// TestNoUnixSocketsOnEveryArchitecture_A12: the filter refuses a Unix
// socket on each architecture it names (x86-64, arm64, i386 by socket and
// by socketcall; x32 whole) and lets every other socket and call through,
// whatever this machine runs. The numbers are the kernel's own, written
// out, not the filter's constants.
func TestNoUnixSocketsOnEveryArchitecture_A12(t *testing.T) {
	prog := noUnixSockets()
	deny, allow := unix.SECCOMP_RET_ERRNO|uint32(unix.EACCES), uint32(unix.SECCOMP_RET_ALLOW)
	for _, c := range []struct {
		name string
		nr   int32
		arch uint32
		arg0 uint64
		want uint32
	}{
		{"x86-64 unix socket", 41, 0xc000003e, unix.AF_UNIX, deny},
		{"x86-64 inet socket", 41, 0xc000003e, unix.AF_INET, allow},
		{"x86-64 socketpair", 53, 0xc000003e, unix.AF_UNIX, allow},
		{"x86-64 write", 1, 0xc000003e, unix.AF_UNIX, allow},
		{"x32 anything", 0x40000000 | 41, 0xc000003e, unix.AF_INET, deny},
		{"arm64 unix socket", 198, 0xc00000b7, unix.AF_UNIX, deny},
		{"arm64 inet6 socket", 198, 0xc00000b7, unix.AF_INET6, allow},
		{"arm64 socketpair", 199, 0xc00000b7, unix.AF_UNIX, allow},
		{"i386 unix socket", 359, 0x40000003, unix.AF_UNIX, deny},
		{"i386 inet socket", 359, 0x40000003, unix.AF_INET, allow},
		{"i386 socketcall SYS_SOCKET", 102, 0x40000003, 1, deny},
		{"i386 socketcall SYS_CONNECT", 102, 0x40000003, 3, allow},
		{"another architecture", 41, 0xc00000f3, unix.AF_UNIX, allow},
	} {
		if got := runFilter(t, prog, c.nr, c.arch, c.arg0); got != c.want {
			t.Errorf("%s: verdict %#x, want %#x", c.name, got, c.want)
		}
	}
}
