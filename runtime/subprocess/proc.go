package subprocess

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/commonagents-go/tool/internal/contain"
	"github.com/commonagents-go/tool/internal/redact"
	"github.com/commonagents-go/tool/runtime"
)

// StderrBytes bounds the stderr a process leaves in a result's ServerData["stderr"]: the last StderrBytes bytes
// are kept, older output is drained and dropped.
const StderrBytes = 16 << 10

// drainGrace bounds how long a reader may take to end once its program has exited and its pipe was told to
// stop waiting: only a pipe that cannot be interrupted (no poller) needs it, and is then closed under the reader.
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
	cgroup string      // the parent cgroup of the process's own; "" = a process group only
	procs  *runtime.Processes
	what   string // the process, as the process limit's error names it
}

// proc is one running program in a containment of its own (a cgroup, else a process group), with its three
// pipes. Its stdout is read by the function given to start; its stderr is drained into a bounded tail. done is
// closed once the program has exited and been reaped, the rest of its containment killed and both readers ended:
// nothing of it remains then (outside a cgroup, a process that called setsid may).
type proc struct {
	cmd    *exec.Cmd
	pid    int
	box    *contain.Box
	stdin  *os.File // write end; closed by the owner
	stderr *tail
	errs   *drainer         // reads the read end of stderr into stderr
	state  *os.ProcessState // set before done is closed; nil when Wait failed
	exited chan struct{}    // closed when the program itself has exited and been reaped
	done   chan struct{}
	// fallback, when set, says why the process runs in a process group although a cgroup was asked for.
	fallback error
	slot     func() // gives back the process's slot of runtime.Processes
}

// start runs s in a containment of its own. readStdout runs in its own goroutine and must return at EOF or on a
// read error: once the program has exited, its stdout ends as soon as what is in the pipe has been read, whoever
// else still holds the pipe.
//
// The process takes a slot of s.procs until it has exited; at the limit start returns the recoverable
// *runtime.Error of Processes.Acquire and starts nothing.
func start(s spec, readStdout func(io.Reader)) (*proc, error) {
	slot, err := s.procs.Acquire(s.what)
	if err != nil {
		return nil, err
	}
	p, err := startContained(s, readStdout, slot)
	if err != nil {
		slot()
	}
	return p, err
}

func startContained(s spec, readStdout func(io.Reader), slot func()) (*proc, error) {
	box, fallback, err := contain.New(s.cgroup)
	if err != nil {
		return nil, errNoGroups
	}
	p, err := startIn(box, s, readStdout, slot)
	if err != nil && box.Mode() == contain.ModeCgroup {
		// clone3 into a cgroup can be refused where a plain fork is not (a seccomp filter): try a process group.
		_ = box.Release()
		fallback = fmt.Errorf("starting in a cgroup: %w", err)
		box, _, _ = contain.New("")
		p, err = startIn(box, s, readStdout, slot)
	}
	if err != nil {
		_ = box.Release()
		return nil, err
	}
	p.fallback = fallback
	return p, nil
}

func startIn(box *contain.Box, s spec, readStdout func(io.Reader), slot func()) (*proc, error) {
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
	cmd.Dir, cmd.Env, cmd.SysProcAttr = s.dir, s.env, box.Attr()
	// *os.File stdio goes to the child as is: no copying goroutines, and Wait returns when the child exits even
	// if a grandchild still holds a pipe.
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	err = cmd.Start()
	closeAll(inR, outW, errW) // the child has its copies
	if err != nil {
		closeAll(inW, outR, errR)
		return nil, err
	}
	box.Started(cmd.Process.Pid)
	p := &proc{cmd: cmd, pid: cmd.Process.Pid, box: box, stdin: inW, stderr: newTail(StderrBytes),
		exited: make(chan struct{}), done: make(chan struct{}), slot: slot}
	out, errs := &drainer{f: outR}, &drainer{f: errR}
	p.errs = errs
	outDone, errDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(outDone)
		readStdout(out)
	}()
	go func() {
		defer close(errDone)
		p.copyStderr()
	}()
	go p.reap(out, errs, outDone, errDone)
	return p, nil
}

// reap waits for the program, kills what remains of its containment, lets the readers take what is left in the
// pipes without waiting for more (a process that escaped a process group may hold them open for ever), and
// removes the containment.
func (p *proc) reap(out, errs *drainer, outDone, errDone chan struct{}) {
	if err := p.cmd.Wait(); err == nil || p.cmd.ProcessState != nil {
		p.state = p.cmd.ProcessState
	}
	_ = p.box.Kill() // descendants never outlive the program
	p.slot()         // before exited: whoever sees the program gone may start another in its slot
	close(p.exited)
	out.stop()
	errs.stop()
	timer := time.NewTimer(drainGrace)
	for _, c := range []chan struct{}{outDone, errDone} {
		select {
		case <-c:
		case <-timer.C:
			closeAll(out.f, errs.f) // unblocks the readers
			<-c
		}
	}
	timer.Stop()
	closeAll(out.f, errs.f)
	_ = p.box.Release()
	close(p.done)
}

// drainer reads a pipe until EOF or, once stop was called, until the pipe is empty. Only one goroutine reads.
type drainer struct {
	f       *os.File
	stopped atomic.Bool
	mu      sync.Mutex
	syncs   []chan int64 // syncStderr's requests, answered by copyStderr
}

// Read implements io.Reader.
func (d *drainer) Read(b []byte) (int, error) {
	n, err := d.f.Read(b)
	if err != nil && d.stopped.Load() && errors.Is(err, os.ErrDeadlineExceeded) {
		return readNow(d.f, b)
	}
	return n, err
}

// stop makes a waiting Read return, and every later one read only what is already in the pipe.
func (d *drainer) stop() {
	d.stopped.Store(true)
	_ = d.f.SetReadDeadline(time.Unix(1, 0))
}

// copyStderr copies the program's stderr into p.stderr until the pipe ends. A sync (syncStderr) makes its read
// return: it is answered with what p.stderr will hold once the bytes in the pipe are taken too, computed while no
// byte is between the pipe and p.stderr.
func (p *proc) copyStderr() {
	d, buf := p.errs, make([]byte, 32<<10)
	for {
		n, err := d.Read(buf)
		if n > 0 {
			_, _ = p.stderr.Write(buf[:n])
		}
		switch {
		case err == nil:
		case errors.Is(err, os.ErrDeadlineExceeded) && !d.stopped.Load():
			_ = d.f.SetReadDeadline(time.Time{}) // before taking the requests: a later one sets it again
			if d.stopped.Load() {
				d.stop() // stop came in between: keep its deadline
			}
			d.mu.Lock()
			syncs := d.syncs
			d.syncs = nil
			d.mu.Unlock()
			target := p.stderr.Written() + int64(unread(d.f))
			for _, s := range syncs {
				s <- target
			}
		default:
			return
		}
	}
}

// syncStderr waits, at most stderrSync, until the stderr the program wrote so far has been drained into p.stderr:
// a server writes its stderr before its reply, but the two pipes are read by different goroutines. The stderr
// reader is woken (a read deadline in the past) and says how much p.stderr will hold once it has taken what is in
// the pipe; bytes it had read but not stored yet are stored by then. A server that keeps writing does not move
// the target, so it cannot hold the call.
func (p *proc) syncStderr() {
	deadline := time.NewTimer(stderrSync)
	defer deadline.Stop()
	answer := make(chan int64, 1)
	p.errs.mu.Lock()
	p.errs.syncs = append(p.errs.syncs, answer)
	p.errs.mu.Unlock()
	_ = p.errs.f.SetReadDeadline(time.Unix(1, 0))
	var target int64
	select {
	case target = <-answer:
	case <-deadline.C:
		return
	case <-p.done:
		return
	}
	for {
		changed := p.stderr.changed()
		if p.stderr.Written() >= target {
			return
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

// stderrSync bounds syncStderr: the bytes are in the pipe already, so only a starved reader goroutine (a loaded
// machine) takes long.
const stderrSync = time.Second

// kill ends the program and everything in its containment at once. Once done is closed the containment is gone
// and kill does nothing.
func (p *proc) kill() { _ = p.box.Kill() }

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
