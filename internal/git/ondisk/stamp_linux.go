package ondisk

import (
	"io/fs"
	"syscall"
	"time"
)

// statIdentity is what a stamp takes of a file beyond its mode, size and
// modification time: its inode, device and change time (which no tool
// sets back).
func statIdentity(info fs.FileInfo) (ino, dev uint64, ctime time.Time, ok bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, time.Time{}, false
	}
	return st.Ino, st.Dev, time.Unix(st.Ctim.Sec, st.Ctim.Nsec), true
}
