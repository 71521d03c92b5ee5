package subprocess

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/commonagents-go/tool/internal/redact"
)

// StderrBytes bounds the stderr a process leaves in a result's ServerData["stderr"]: the last StderrBytes bytes
// are kept, older output is drained and dropped.
const StderrBytes = 16 << 10

// drainGrace bounds how long the pipes of a process that has exited (its group killed) may stay open: a process
// that left the group (setsid) and kept them is cut off after it.
const drainGrace = 2 * time.Second

// errNoGroups is why the backend cannot run processes on a system without process groups.
var errNoGroups = errors.New("exec: running processes needs a unix system (process groups)")

// spec is a rendered command line.
type spec struct {
	path   string
	args   []string
	dir    string
	env    []string
	redact *redact.Set // the forwarded variables' values, masked in messages; never nil
}

// proc is one running program in a process group of its own, with its three pipes. Its stdout is read by the
// function given to start; its stderr is drained into a bounded tail. done is closed once the program has exited
// and been reaped, the rest of its group killed and both readers ended: nothing of it remains then.
type proc struct {
	cmd    *exec.Cmd
	pid    int
	stdin  *os.File // write end; closed by the owner
	stderr *tail
	errR   *os.File         // read end of stderr, drained into stderr
	state  *os.ProcessState // set before done is closed; nil when Wait failed
	exited chan struct{}    // closed when the program itself has exited and been reaped
	done   chan struct{}
}

// start runs s in a new process group. readStdout runs in its own goroutine and must return at EOF or on a read
// error (the reaper closes the pipe after drainGrace if a stray process keeps it open).
func start(s spec, readStdout func(io.Reader)) (*proc, error) {
	attr := groupAttr()
	if attr == nil {
		return nil, errNoGroups
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, err
	}
	cmd := exec.Command(s.path, s.args...)
	cmd.Dir, cmd.Env, cmd.SysProcAttr = s.dir, s.env, attr
	// *os.File stdio goes to the child as is: no copying goroutines, and Wait returns when the child exits even
	// if a grandchild still holds a pipe.
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	err = cmd.Start()
	closeAll(inR, outW, errW) // the child has its copies
	if err != nil {
		closeAll(inW, outR, errR)
		return nil, err
	}
	p := &proc{cmd: cmd, pid: cmd.Process.Pid, stdin: inW, stderr: newTail(StderrBytes), errR: errR,
		exited: make(chan struct{}), done: make(chan struct{})}
	outDone, errDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(outDone)
		readStdout(outR)
	}()
	go func() {
		defer close(errDone)
		_, _ = io.Copy(p.stderr, errR)
	}()
	go p.reap(outR, errR, outDone, errDone)
	return p, nil
}

// reap waits for the program, kills what remains of its group, and waits for the readers, closing pipes that a
// process outside the group keeps open past drainGrace.
func (p *proc) reap(outR, errR *os.File, outDone, errDone chan struct{}) {
	if err := p.cmd.Wait(); err == nil || p.cmd.ProcessState != nil {
		p.state = p.cmd.ProcessState
	}
	close(p.exited)
	_ = killGroup(p.pid) // grandchildren never outlive the program
	timer := time.NewTimer(drainGrace)
	for _, c := range []chan struct{}{outDone, errDone} {
		select {
		case <-c:
		case <-timer.C:
			closeAll(outR, errR) // unblocks the readers
			<-c
		}
	}
	timer.Stop()
	closeAll(outR, errR)
	close(p.done)
}

// syncStderr waits, at most stderrSync, until the stderr the program wrote so far has been drained into p.stderr:
// a server writes its stderr before its reply, but the two pipes are read by different goroutines.
func (p *proc) syncStderr() {
	var deadline *time.Timer
	for {
		if unread(p.errR) == 0 {
			return
		}
		changed := p.stderr.changed()
		if unread(p.errR) == 0 { // drained between the two looks
			return
		}
		if deadline == nil {
			deadline = time.NewTimer(stderrSync)
			defer deadline.Stop()
		}
		select {
		case <-changed:
		case <-deadline.C:
			return
		case <-p.done:
			return
		}
	}
}

// stderrSync bounds syncStderr.
const stderrSync = 100 * time.Millisecond

// kill ends the program and its whole group at once. Once done is closed the group is already gone, and its id
// is not signalled again: it could in principle name someone else's group by now.
func (p *proc) kill() {
	select {
	case <-p.done:
	default:
		_ = killGroup(p.pid)
	}
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}

// minRedact is the shortest forwarded value masked in messages: shorter ones ("1", "C") are no secrets, and
// masking them would garble the text.
const minRedact = 4

// environ is the environment of a new process: PATH and HOME, then the variables named in names, each with its
// value in the host process now; names the host has not set are left out. Nothing else is inherited. secrets holds
// the values of the named variables (minRedact bytes or longer), to mask in messages.
func environ(names []string) (env []string, secrets *redact.Set) {
	env = make([]string, 0, len(names)+2) // never nil: a nil Env would inherit everything
	secrets = &redact.Set{}
	add := func(name string, secret bool) {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
			if secret && len(v) >= minRedact {
				secrets.Add(v)
			}
		}
	}
	add("PATH", false)
	add("HOME", false)
	for _, n := range names {
		if n != "PATH" && n != "HOME" {
			add(n, true)
		}
	}
	return env, secrets
}

// tail keeps the last bytes written to it and counts them all. It is safe for concurrent use.
type tail struct {
	mu      sync.Mutex
	buf     []byte // the last max bytes at most
	max     int
	written int64
	notify  chan struct{} // closed by the next Write; nil when nobody waits
}

// changed returns a channel closed by the next Write.
func (t *tail) changed() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.notify == nil {
		t.notify = make(chan struct{})
	}
	return t.notify
}

func newTail(max int) *tail { return &tail{max: max} }

// Write implements io.Writer; it never fails.
func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(b)
	t.written += int64(n)
	if t.notify != nil {
		close(t.notify)
		t.notify = nil
	}
	if len(b) >= t.max {
		t.buf = append(t.buf[:0], b[len(b)-t.max:]...)
		return n, nil
	}
	if over := len(t.buf) + len(b) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, b...)
	return n, nil
}

// Written is how many bytes were written in all.
func (t *tail) Written() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.written
}

// Since returns the bytes written after the first from bytes, as far as they are still kept.
func (t *tail) Since(from int64) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.written - from
	if n <= 0 {
		return ""
	}
	if n > int64(len(t.buf)) {
		n = int64(len(t.buf))
	}
	return string(t.buf[int64(len(t.buf))-n:])
}
