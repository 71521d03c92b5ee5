//go:build !unix

package contain

import "syscall"

const groupsSupported = false

func killGroup(int) error { return ErrUnsupported }

func attr(int) *syscall.SysProcAttr { return nil }

func closeFD(int) {}
