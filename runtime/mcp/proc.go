package mcp

import (
	"os/exec"

	"github.com/commonagents-go/tool/internal/contain"
)

// contain prepares cmd, a stdio server, to start in a containment of its own: a child cgroup of parent where
// that is set and writable, ended with cgroup.kill so that nothing the server starts survives it (setsid
// included), else a process group of its own. Where neither exists only the server itself can be killed.
func (s *session) contain(cmd *exec.Cmd, parent string) {
	box, fallback, err := contain.New(parent)
	if err != nil {
		return
	}
	s.box, s.fallback = box, fallback
	cmd.SysProcAttr = box.Attr()
}

// containment is contain.ModeCgroup or contain.ModeProcessGroup, "" when the server is not contained.
func (s *session) containment() string {
	if s.box == nil {
		return ""
	}
	return s.box.Mode()
}

// started records the server's process once it started; the cgroup's descriptor is closed then.
func (s *session) started() {
	if s.box != nil && s.proc != nil && s.proc.Process != nil {
		s.box.Started(s.proc.Process.Pid)
	}
}

// kill ends the server and everything in its containment at once; a containment already gone is not an error.
func (s *session) kill() {
	switch {
	case s.box != nil:
		_ = s.box.Kill()
	case s.proc != nil && s.proc.Process != nil:
		_ = s.proc.Process.Kill()
	}
}

// release ends what is left of the server's containment and removes it; call it once the server was reaped.
func (s *session) release() {
	if s.box != nil {
		_ = s.box.Release()
	}
}
