//go:build !unix

package mcp

import "os/exec"

// ownGroup does nothing where process groups do not exist.
func ownGroup(*exec.Cmd) {}

// killGroup kills the server process; processes it started are not tracked on this platform.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
