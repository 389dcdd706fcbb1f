package sandbox

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock before version 9 does not reach connect(2) on a named socket,
// and a server outside the sandbox runs what it is asked as its own,
// unsandboxed: flume's tmux server would open a window for anything the
// agent names. So no process in the sandbox makes a Unix socket (one it
// gets from socketpair for a child's pipes is not refused): a seccomp
// filter answers socket(AF_UNIX, …) with EACCES on the architectures
// flume builds for. A 32-bit process on x86-64 makes no socket through
// socketcall at all.

// Audit architectures and the socket calls' numbers.
const (
	auditArchX86_64  = 0xc000003e
	auditArchAarch64 = 0xc00000b7
	auditArchI386    = 0x40000003
	x32Bit           = 0x40000000
	sysSocketX86_64  = 41
	sysSocketAarch64 = 198
	sysSocketI386    = 359
	sysSocketcall386 = 102 // its first argument 1 is SYS_SOCKET
)

// bpfProgram assembles a classic BPF program whose jumps name labels.
type bpfProgram struct {
	insns  []unix.SockFilter
	labels map[string]int
	fixups map[int][2]string // instruction → its true and false targets
}

func (p *bpfProgram) label(name string) { p.labels[name] = len(p.insns) }

func (p *bpfProgram) load(offset uint32) {
	p.insns = append(p.insns, unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: offset})
}

func (p *bpfProgram) jump(op uint16, k uint32, yes, no string) {
	p.fixups[len(p.insns)] = [2]string{yes, no}
	p.insns = append(p.insns, unix.SockFilter{Code: unix.BPF_JMP | op | unix.BPF_K, K: k})
}

func (p *bpfProgram) ret(k uint32) {
	p.insns = append(p.insns, unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: k})
}

func (p *bpfProgram) assemble() []unix.SockFilter {
	for i, t := range p.fixups {
		p.insns[i].Jt = uint8(p.labels[t[0]] - i - 1)
		p.insns[i].Jf = uint8(p.labels[t[1]] - i - 1)
	}
	return p.insns
}

// noUnixSockets is the filter: seccomp_data holds the call's number at 0,
// the architecture at 4 and the first argument's low word at 16.
func noUnixSockets() []unix.SockFilter {
	p := &bpfProgram{labels: map[string]int{}, fixups: map[int][2]string{}}
	p.load(4)
	p.jump(unix.BPF_JEQ, auditArchX86_64, "x86_64", "not-x86_64")
	p.label("not-x86_64")
	p.jump(unix.BPF_JEQ, auditArchAarch64, "aarch64", "not-aarch64")
	p.label("not-aarch64")
	p.jump(unix.BPF_JEQ, auditArchI386, "i386", "allow")
	p.label("x86_64")
	p.load(0)
	p.jump(unix.BPF_JGE, x32Bit, "deny", "x86_64-native")
	p.label("x86_64-native")
	p.jump(unix.BPF_JEQ, sysSocketX86_64, "domain", "allow")
	p.label("aarch64")
	p.load(0)
	p.jump(unix.BPF_JEQ, sysSocketAarch64, "domain", "allow")
	p.label("i386")
	p.load(0)
	p.jump(unix.BPF_JEQ, sysSocketI386, "domain", "not-socket")
	p.label("not-socket")
	p.jump(unix.BPF_JEQ, sysSocketcall386, "domain", "allow")
	p.label("domain")
	p.load(16)
	p.jump(unix.BPF_JEQ, unix.AF_UNIX, "deny", "allow")
	p.label("allow")
	p.ret(unix.SECCOMP_RET_ALLOW)
	p.label("deny")
	p.ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES))
	return p.assemble()
}

// refuseUnixSockets installs the filter on every thread of this process
// (no_new_privs is already set: Landlock's restriction sets it).
func refuseUnixSockets() error {
	insns := noUnixSockets()
	prog := unix.SockFprog{Len: uint16(len(insns)), Filter: &insns[0]}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog))); errno != 0 {
		return fmt.Errorf("refuse Unix sockets (seccomp): %w", errno)
	}
	return nil
}
