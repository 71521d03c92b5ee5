//go:build unix && !linux

package contain

import "syscall"

// attr puts the process in a new process group; there are no cgroups here.
func attr(int) *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
