// Package leakcheck finds goroutines a test left behind: it snapshots the goroutines running when a test starts
// and, at its end, waits a bounded time for every goroutine started since to exit.
package leakcheck

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// Check records the goroutines running now and registers a cleanup that fails t if goroutines started after
// this call are still running a short while after the test (and its other cleanups registered later) ended.
// Tests that use it must not run in parallel with tests that start long-lived goroutines of their own.
func Check(t testing.TB) {
	t.Helper()
	before := ids(stacks())
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for {
			leaked := leaked(before)
			if len(leaked) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("leakcheck: %d goroutine(s) left behind:\n\n%s", len(leaked), strings.Join(leaked, "\n\n"))
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

func leaked(before map[string]bool) []string {
	var out []string
	for _, g := range stacks() {
		id := goroutineID(g)
		if before[id] || ignorable(g) {
			continue
		}
		out = append(out, g)
	}
	return out
}

// ignorable reports goroutines owned by the runtime or the testing package rather than by the code under test.
func ignorable(stack string) bool {
	for _, s := range []string{
		"testing.(*T).Run", "testing.(*M).", "testing.tRunner", "runtime.goexit0", "os/signal.signal_recv",
		"created by runtime.gc", "runtime.ReadTrace", "net/http.(*persistConn)",
	} {
		if strings.Contains(stack, s) && !strings.Contains(stack, "commonagents-go/tool") {
			return true
		}
	}
	return strings.Contains(stack, "leakcheck.stacks")
}

func stacks() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	return strings.Split(strings.TrimSpace(string(buf)), "\n\n")
}

func ids(gs []string) map[string]bool {
	m := make(map[string]bool, len(gs))
	for _, g := range gs {
		m[goroutineID(g)] = true
	}
	return m
}

// goroutineID returns "goroutine N" from a stack's header line "goroutine N [state]:".
func goroutineID(stack string) string {
	header, _, _ := strings.Cut(stack, "\n")
	if i := strings.Index(header, " ["); i >= 0 {
		return header[:i]
	}
	return header
}
