//go:build unix

package subprocess

import (
	"errors"
	"syscall"
)

// groupAttr puts the child in a process group of its own, whose id is its pid, so that killGroup reaches the
// processes it starts too.
func groupAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

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
