package ondisk

import (
	"fmt"
	"io/fs"
	"syscall"
)

// ReadSmall reads a file of git's that fits buf (a .git file, a HEAD) in
// three system calls: os.ReadFile's stat and its try to register a
// regular file with the poller were a third of a status's system calls
// after gc. A file that does not fit is an error.
func ReadSmall(path string, buf []byte) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	n := 0
	for n < len(buf) {
		m, err := syscall.Read(fd, buf[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if m == 0 {
			return buf[:n], nil
		}
		n += m
	}
	return nil, fmt.Errorf("%s: larger than %d bytes", path, len(buf))
}
