package leakcheck

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// recorder is a testing.TB whose cleanups run when the test says and whose errors are kept.
type recorder struct {
	testing.TB
	cleanups []func()
	errors   []string
}

func (r *recorder) Helper()          {}
func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recorder) end() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

func parked(stop <-chan struct{}) { <-stop }

func TestReportsALeakedGoroutine(t *testing.T) {
	defer func(d time.Duration) { settle = d }(settle)
	settle = 0 // one goleak.Find (its own retries, about half a second) is enough to see a goroutine that stays
	stop := make(chan struct{})
	defer close(stop)
	r := &recorder{TB: t}
	Check(r)
	go parked(stop)
	r.end()
	if len(r.errors) != 1 || !strings.Contains(r.errors[0], "leakcheck.parked") {
		t.Fatalf("errors %q, want the parked goroutine", r.errors)
	}
}

func TestQuietWhenGoroutinesEnd(t *testing.T) {
	stop := make(chan struct{})
	r := &recorder{TB: t}
	Check(r)
	go parked(stop)
	close(stop) // it ends while Check retries
	r.end()
	if len(r.errors) != 0 {
		t.Fatalf("errors %q", r.errors)
	}
}
