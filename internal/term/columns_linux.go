package term

import (
	"os"

	"golang.org/x/sys/unix"
)

// Columns is how wide the terminal w writes to is, 0 when w is not a
// terminal (a pipe, a file, a buffer) or says no width.
func Columns(w any) int {
	f, ok := w.(*os.File)
	if !ok {
		return 0
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}
