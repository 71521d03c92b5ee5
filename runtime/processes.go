package runtime

import (
	"sync"
)

// Processes bounds the processes the backends of one task have running at once (tool.Limits.MaxProcesses):
// stdio MCP servers, exec programs and exec servers. A backend takes a slot before it starts a process and gives
// it back once the process has exited. A nil *Processes bounds nothing. It is safe for concurrent use.
type Processes struct {
	max int

	mu      sync.Mutex
	running int
}

// NewProcesses returns a bound of max processes running at once; max <= 0 returns nil, no bound.
func NewProcesses(max int) *Processes {
	if max <= 0 {
		return nil
	}
	return &Processes{max: max}
}

// Acquire takes a slot for a process about to start, described by what ("the stdio server github"); release gives
// it back, once (later calls do nothing). At the bound it returns a recoverable *Error of kind unavailable naming
// the limit, and starts nothing: the call fails, the task goes on, and a call made once a process has exited may
// succeed.
func (p *Processes) Acquire(what string) (release func(), err error) {
	if p == nil {
		return func() {}, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running >= p.max {
		e := Errorf(KindUnavailable, "starting %s would exceed the task's process limit (max_processes %d): %d "+
			"processes of this task are running", what, p.max, p.running)
		e.Hint = "call an action whose process already runs, or ask the host for a higher limit"
		e.Retryable = false // most processes (stdio servers) live as long as the task
		return nil, e
	}
	p.running++
	return sync.OnceFunc(func() {
		p.mu.Lock()
		p.running--
		p.mu.Unlock()
	}), nil
}

// Running reports how many slots are taken.
func (p *Processes) Running() int {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.running
}
