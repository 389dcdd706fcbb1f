package sandbox

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The sandbox's second layer (A12, A13): calls that open a side door out
// of every other layer are refused by a seccomp filter, inherited by
// every process the agent starts.
//
//   - Unix sockets: Landlock before version 9 does not reach connect(2) on
//     a named socket, and a server outside runs what it is asked as its
//     own (flume's tmux server opens a window for anything it is told).
//     No Unix socket is made, and a pair is only a stream pair (a child's
//     pipes): a datagram pair's sendto reaches any named socket.
//   - io_uring: IORING_OP_SOCKET makes the socket socket(2) is refused.
//   - TIOCSTI and TIOCLINUX push input into a terminal, the person's
//     shell among them where the agent shares its terminal.
//   - The kernel's keyrings are shared by the user's other processes.
//   - ptrace's attach and seize reach a running process; Landlock scopes
//     them too, and this holds where it does not.
//
// The filter is written out for the architectures flume builds for. A
// 32-bit process on x86-64 goes through socketcall for its sockets,
// whose arguments a filter cannot read: its socket and socketpair calls
// are refused whole. x32 and any other architecture are refused whole.

// call is a system call's number on x86-64, arm64 and i386; -1 where the
// architecture has none.
type call struct{ x86_64, aarch64, i386 int }

// The kernel's numbers, written out (arch/x86/entry/syscalls,
// include/uapi/asm-generic/unistd.h).
var (
	sysSocket          = call{41, 198, 359}
	sysSocketpair      = call{53, 199, 360}
	sysSocketcall      = call{-1, -1, 102}
	sysIoctl           = call{16, 29, 54}
	sysIOURingSetup    = call{425, 425, 425}
	sysIOURingEnter    = call{426, 426, 426}
	sysIOURingRegister = call{427, 427, 427}
	sysKeyctl          = call{250, 219, 288}
	sysAddKey          = call{248, 217, 286}
	sysRequestKey      = call{249, 218, 287}
	sysPtrace          = call{101, 117, 26}
)

// Audit architectures.
const (
	auditArchX86_64  = 0xc000003e
	auditArchAarch64 = 0xc00000b7
	auditArchI386    = 0x40000003
	x32Bit           = 0x40000000
)

// Values the filter compares arguments with.
const (
	tiocsti              = 0x5412
	tioclinux            = 0x541c
	ptraceAttach         = 16
	ptraceSeize          = 0x4206
	sockTypeMask         = 0xf // SOCK_NONBLOCK and SOCK_CLOEXEC set other bits
	socketcallSocket     = 1
	socketcallSocketpair = 8
)

// cond holds when a call's argument, its low word masked (0: whole),
// equals value, or differs from it when not is set.
type cond struct {
	arg         int
	mask, value uint32
	not         bool
}

// refusal answers a call with errno when all its conditions hold.
type refusal struct {
	what  string
	nr    call
	conds []cond
	errno unix.Errno
}

// refusals are the filter's rules, checked in order.
var refusals = []refusal{
	{"a unix socket", sysSocket, []cond{{arg: 0, value: unix.AF_UNIX}}, unix.EACCES},
	{"a unix pair other than a stream", sysSocketpair, []cond{{arg: 0, value: unix.AF_UNIX}, {arg: 1, mask: sockTypeMask, value: unix.SOCK_STREAM, not: true}}, unix.EACCES},
	{"a 32-bit socket", sysSocketcall, []cond{{arg: 0, value: socketcallSocket}}, unix.EACCES},
	{"a 32-bit socket pair", sysSocketcall, []cond{{arg: 0, value: socketcallSocketpair}}, unix.EACCES},
	{"io_uring", sysIOURingSetup, nil, unix.ENOSYS},
	{"io_uring", sysIOURingEnter, nil, unix.ENOSYS},
	{"io_uring", sysIOURingRegister, nil, unix.ENOSYS},
	{"typing into a terminal", sysIoctl, []cond{{arg: 1, value: tiocsti}}, unix.EPERM},
	{"typing into a console", sysIoctl, []cond{{arg: 1, value: tioclinux}}, unix.EPERM},
	{"the user's keyrings", sysKeyctl, nil, unix.EPERM},
	{"the user's keyrings", sysAddKey, nil, unix.EPERM},
	{"the user's keyrings", sysRequestKey, nil, unix.EPERM},
	{"attaching to a process", sysPtrace, []cond{{arg: 0, value: ptraceAttach}}, unix.EPERM},
	{"seizing a process", sysPtrace, []cond{{arg: 0, value: ptraceSeize}}, unix.EPERM},
}

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

func (p *bpfProgram) and(k uint32) {
	p.insns = append(p.insns, unix.SockFilter{Code: unix.BPF_ALU | unix.BPF_AND | unix.BPF_K, K: k})
}

func (p *bpfProgram) jump(op uint16, k uint32, yes, no string) {
	p.fixups[len(p.insns)] = [2]string{yes, no}
	p.insns = append(p.insns, unix.SockFilter{Code: unix.BPF_JMP | op | unix.BPF_K, K: k})
}

// goTo jumps to a label however far: a conditional jump reaches 255
// instructions at most.
func (p *bpfProgram) goTo(target string) {
	p.fixups[len(p.insns)] = [2]string{target}
	p.insns = append(p.insns, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JA})
}

func (p *bpfProgram) ret(k uint32) {
	p.insns = append(p.insns, unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: k})
}

// assemble resolves the jumps; a label never placed, or a conditional
// jump too far, is the filter's own error and panics.
func (p *bpfProgram) assemble() []unix.SockFilter {
	off := func(i int, label string) int {
		at, ok := p.labels[label]
		if !ok || at <= i {
			panic("seccomp filter: no label " + label + " after its jump")
		}
		return at - i - 1
	}
	for i, t := range p.fixups {
		if p.insns[i].Code == unix.BPF_JMP|unix.BPF_JA {
			p.insns[i].K = uint32(off(i, t[0]))
			continue
		}
		yes, no := off(i, t[0]), off(i, t[1])
		if yes > 255 || no > 255 {
			panic("seccomp filter: a conditional jump past 255 instructions")
		}
		p.insns[i].Jt, p.insns[i].Jf = uint8(yes), uint8(no)
	}
	return p.insns
}

// argOffset is where seccomp_data holds argument i's low word (after
// the call's number, the architecture and the instruction pointer).
func argOffset(i int) uint32 { return uint32(16 + 8*i) }

// rules writes the refusals of one architecture: each refusal whose
// call the architecture has is tried in turn, the first that holds
// answers, and a call none holds for is allowed.
func (p *bpfProgram) rules(arch string, nr func(call) int) {
	for i, r := range refusals {
		// Each refusal reads the number afresh: a condition before it
		// may have loaded an argument.
		p.label(fmt.Sprintf("%s-%d", arch, i))
		n := nr(r.nr)
		if n < 0 {
			continue
		}
		next, conds := fmt.Sprintf("%s-%d", arch, i+1), fmt.Sprintf("%s-%d-conds", arch, i)
		p.load(0)
		p.jump(unix.BPF_JEQ, uint32(n), conds, next)
		p.label(conds)
		for j, c := range r.conds {
			holds := fmt.Sprintf("%s-%d-cond-%d", arch, i, j+1)
			p.load(argOffset(c.arg))
			if c.mask != 0 {
				p.and(c.mask)
			}
			if c.not {
				p.jump(unix.BPF_JEQ, c.value, next, holds)
			} else {
				p.jump(unix.BPF_JEQ, c.value, holds, next)
			}
			p.label(holds)
		}
		p.ret(unix.SECCOMP_RET_ERRNO | uint32(r.errno))
	}
	p.label(fmt.Sprintf("%s-%d", arch, len(refusals)))
	p.ret(unix.SECCOMP_RET_ALLOW)
}

// filter is the whole program: seccomp_data holds the call's number at
// 0 and the architecture at 4.
func filter() []unix.SockFilter {
	p := &bpfProgram{labels: map[string]int{}, fixups: map[int][2]string{}}
	p.load(4)
	for _, a := range []struct {
		name  string
		audit uint32
	}{{"x86_64", auditArchX86_64}, {"aarch64", auditArchAarch64}, {"i386", auditArchI386}} {
		p.jump(unix.BPF_JEQ, a.audit, "to-"+a.name, "not-"+a.name)
		p.label("to-" + a.name)
		p.goTo(a.name)
		p.label("not-" + a.name)
	}
	p.label("deny-all")
	p.ret(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS))
	p.label("x86_64")
	p.load(0)
	p.jump(unix.BPF_JGE, x32Bit, "x32", "x86_64-native")
	p.label("x32")
	p.ret(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS))
	p.label("x86_64-native")
	p.rules("x86_64", func(c call) int { return c.x86_64 })
	p.label("aarch64")
	p.rules("aarch64", func(c call) int { return c.aarch64 })
	p.label("i386")
	p.rules("i386", func(c call) int { return c.i386 })
	return p.assemble()
}

// refuseSideDoors installs the filter on every thread of this process.
// no_new_privs is set first: Landlock's restriction sets it too, and the
// filter is entered without Landlock where that layer is tested alone.
func refuseSideDoors() error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("refuse side doors (no_new_privs): %w", err)
	}
	insns := filter()
	prog := unix.SockFprog{Len: uint16(len(insns)), Filter: &insns[0]}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog))); errno != 0 {
		return fmt.Errorf("refuse side doors (seccomp): %w", errno)
	}
	return nil
}
