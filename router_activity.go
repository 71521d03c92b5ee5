package tool

import (
	"sync/atomic"
	"time"
)

// A task's activity, defined once (issue 28; whatever keeps tasks per session reuses it, docs/scaling.md):
//
//   - A task is ACTIVE while something runs in it: a call (Invoke, InvokeFunction), a delivery (Deliver, a
//     Router's dispatch, from the claim of its delivery id to the record), an Interrupt or Resume, or a
//     background event's fetch. Each enters the task (enter) and leaves it (leave). A task with background events
//     (polls, subscriptions) that run is PINNED: its workers are in flight all the time.
//   - Its IDLE AGE is the time on the Tool's Clock since it last stopped being active (since it started, when
//     nothing ran yet). Eviction from a Router's task cache (Detach) takes only tasks that are neither active nor
//     pinned, and of those the ones idle longest first, or idle past the cache's idle age.
//
// This is not the activity that event timeouts count (taskEvents.lastActivity: calls, deliveries that activate,
// Touch), which is about the agent's conversation, not about what the process holds.
type activity struct {
	running atomic.Int64 // entered and not yet left
	left    atomic.Int64 // unix nanoseconds on the Tool's Clock of the last leave (or the start)
}

// leave ends what enter registered.
func (t *Task) leave() {
	t.activity.left.Store(t.tool.opts.clock.Now().UnixNano())
	t.activity.running.Add(-1)
	t.calls.done()
}

// active reports whether something runs in the task.
func (t *Task) active() bool { return t.activity.running.Load() > 0 }

// idleAge is how long the task has not been active at now; 0 while it is.
func (t *Task) idleAge(now time.Time) time.Duration {
	if t.active() {
		return 0
	}
	return max(0, now.Sub(time.Unix(0, t.activity.left.Load())))
}

// pinned reports whether the task runs background events that its capability includes: they run in this
// process, so the task must stay in memory.
func (t *Task) pinned() bool {
	for i := range t.tool.events {
		if _, ok := t.events.background(i); ok && t.events.included[i] {
			return true
		}
	}
	return false
}
