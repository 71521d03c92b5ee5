package subprocess

import (
	"os"
	"syscall"
	"unsafe"
)

// unread returns how many bytes wait in the pipe f, 0 when that cannot be told.
func unread(f *os.File) int {
	rc, err := f.SyscallConn() // Control, unlike Fd, leaves the file non-blocking
	if err != nil {
		return 0
	}
	n := 0
	_ = rc.Control(func(fd uintptr) {
		var v int32
		if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&v))); e == 0 {
			n = int(v)
		}
	})
	return n
}
