//go:build unix

package subprocess

import (
	"errors"
	"io"
	"os"
	"syscall"
)

// readNow reads what is in the non-blocking pipe f without waiting for more: io.EOF when it is empty.
func readNow(f *os.File, b []byte) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, io.EOF
	}
	n := 0
	// Control, unlike Read, ignores the deadline that stopped the reader; the pipe is non-blocking (os.Pipe).
	cerr := rc.Control(func(fd uintptr) {
		for {
			n, err = syscall.Read(int(fd), b)
			if !errors.Is(err, syscall.EINTR) {
				return
			}
		}
	})
	if cerr != nil || err != nil || n <= 0 {
		return 0, io.EOF
	}
	return n, nil
}
