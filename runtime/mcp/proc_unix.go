//go:build unix

package mcp

import (
	"os/exec"
	"syscall"
)

// ownGroup makes the server the leader of a new process group, so that Teardown ends what it started too.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills the process group of a started server; a group already gone is not an error.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
