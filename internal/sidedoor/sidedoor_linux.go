//go:build linux

package sidedoor

import (
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Probes tries each side door an agent opened in the attack issue 60
// records, and returns what the kernel answered each: nil where it got
// through.
func Probes() map[string]error {
	out := map[string]error{}
	var params [120]byte
	_, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 4, uintptr(unsafe.Pointer(&params[0])), 0)
	out["io_uring"] = errnoErr(e)
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	out["unix socket"] = err
	_ = unix.Close(fd) // a probe's socket: only whether it was made counts
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM, 0)
	out["datagram pair"] = err
	if err == nil {
		_, _ = unix.Close(fds[0]), unix.Close(fds[1])
	}
	fds, err = unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	out["stream pair"] = err
	if err == nil {
		_, _ = unix.Close(fds[0]), unix.Close(fds[1])
	}
	out["keyctl"] = errnoErr(keyctlGetKeyringID())
	out["typing into a terminal"] = typeIntoATerminal()
	return out
}

func errnoErr(e unix.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

// keyctlGetKeyringID asks for the session keyring's id, making none.
func keyctlGetKeyringID() unix.Errno {
	id := unix.KEY_SPEC_USER_KEYRING
	_, _, e := unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_GET_KEYRING_ID, uintptr(id), 0)
	return e
}

// typeIntoATerminal pushes a byte into a terminal of its own: a new
// pseudo-terminal, opened as its controlling terminal by a process that
// leads a session of its own (the helper is started so), so that the
// kernel lets TIOCSTI through where nothing refuses it.
func typeIntoATerminal() error {
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer ptm.Close()
	if err := unix.IoctlSetPointerInt(int(ptm.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		return err
	}
	n, err := unix.IoctlGetInt(int(ptm.Fd()), unix.TIOCGPTN)
	if err != nil {
		return err
	}
	pts, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer pts.Close()
	b := byte('x')
	_, _, e := unix.Syscall(unix.SYS_IOCTL, pts.Fd(), unix.TIOCSTI, uintptr(unsafe.Pointer(&b)))
	return errnoErr(e)
}
