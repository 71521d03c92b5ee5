// Package contain runs processes so that everything they start can be ended with them. Where the host can write
// a cgroup v2 hierarchy (Linux), each process starts inside a child cgroup of its own (clone3 with
// CLONE_INTO_CGROUP, via SysProcAttr.UseCgroupFD) and is ended with cgroup.kill, which reaches every descendant:
// double forks and setsid included. Elsewhere it runs in a process group of its own, which a descendant leaves
// by calling setsid; that is the limit of the fallback.
package contain

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
)

// The containments a Box reports.
const (
	// ModeCgroup is a child cgroup v2 of its own, ended with cgroup.kill.
	ModeCgroup = "cgroup"
	// ModeProcessGroup is a process group of its own, ended with kill(-pgid, SIGKILL).
	ModeProcessGroup = "process_group"
)

// ErrUnsupported is why a process cannot be contained at all: the system has no process groups.
var ErrUnsupported = errors.New("containing processes needs a unix system (process groups)")

// seq numbers the cgroups this process creates, so that their names never collide.
var seq atomic.Uint64

// Box is the containment of one process and everything it starts. Its methods are safe for concurrent use.
type Box struct {
	dir string // the child cgroup; "" in process-group mode
	fd  int    // the open cgroup directory until Started; -1 when none

	mu       sync.Mutex
	pid      int
	released bool
}

// New prepares the containment of one process. With parent a writable cgroup v2 directory the process will run
// in a new child cgroup of it; with parent "" (or when the child cannot be created, reported as fallback) in a
// process group of its own. The box is usable whenever err is nil; fallback, when not nil, says why a cgroup
// was wanted but not used (for a log line). err is ErrUnsupported where processes cannot be contained.
func New(parent string) (b *Box, fallback, err error) {
	if !groupsSupported {
		return nil, nil, ErrUnsupported
	}
	b = &Box{fd: -1}
	if parent == "" {
		return b, nil, nil
	}
	dir := fmt.Sprintf("%s/tool-%d-%d", parent, os.Getpid(), seq.Add(1))
	fd, err := makeCgroup(dir)
	if err != nil {
		return b, fmt.Errorf("cgroup %s: %w", dir, err), nil
	}
	b.dir, b.fd = dir, fd
	return b, nil, nil
}

// Mode is ModeCgroup or ModeProcessGroup.
func (b *Box) Mode() string {
	if b.dir != "" {
		return ModeCgroup
	}
	return ModeProcessGroup
}

// Attr is the SysProcAttr to start the process with: a process group of its own and, in cgroup mode, the
// cgroup to start in.
func (b *Box) Attr() *syscall.SysProcAttr { return attr(b.fd) }

// Started records the process that started in the box and closes the cgroup's descriptor, which only the
// start needed. Call it once, after a successful start.
func (b *Box) Started(pid int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pid = pid
	b.closeFD()
}

func (b *Box) closeFD() {
	if b.fd >= 0 {
		closeFD(b.fd)
		b.fd = -1
	}
}

// Kill ends every process in the box at once (SIGKILL). After Release it does nothing: a process group's id
// could name someone else's group by then.
func (b *Box) Kill() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.released {
		return nil
	}
	return b.kill()
}

func (b *Box) kill() error {
	if b.dir != "" {
		return killCgroup(b.dir)
	}
	return killGroup(b.pid)
}

// Release ends what is left in the box and, in cgroup mode, waits until the cgroup is empty and removes it.
// Call it once the process itself has been reaped (or failed to start). It is idempotent; an error means the
// cgroup could not be emptied or removed in time and stays behind.
func (b *Box) Release() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.released {
		return nil
	}
	b.released = true
	b.closeFD()
	if b.dir == "" {
		return killGroup(b.pid)
	}
	return removeCgroup(b.dir)
}
