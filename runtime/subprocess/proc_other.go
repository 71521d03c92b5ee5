//go:build !unix

package subprocess

import "syscall"

// groupAttr is nil here: without process groups the backend cannot bound what a program starts, so it refuses
// to run processes (see errNoGroups).
func groupAttr() *syscall.SysProcAttr { return nil }

func killGroup(int) error { return errNoGroups }
