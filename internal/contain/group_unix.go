//go:build unix

package contain

import (
	"errors"
	"syscall"
)

const groupsSupported = true

// killGroup sends SIGKILL to every process of the group pgid. A group that no longer exists is not an error.
func killGroup(pgid int) error {
	if pgid <= 0 {
		return nil
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

func closeFD(fd int) { _ = syscall.Close(fd) }
