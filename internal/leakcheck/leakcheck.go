// Package leakcheck finds goroutines a test left behind, with go.uber.org/goleak: it snapshots the goroutines
// running when a test starts and, at its end, retries for a bounded time until every goroutine started since has
// exited. tooltest.NoLeaks is its public face.
package leakcheck

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

// settle bounds how long Check waits for goroutines to exit after the test: goleak.Find retries for about half a
// second, and Check calls it again until settle has passed, so a loaded machine's slow exits are not reported.
var settle = 5 * time.Second

// ignored are goroutines the code under test does not own: idle keep-alive connections of net/http clients (a
// test's own client, or a pool a test shares), which their Transport closes on its own schedule.
var ignored = []goleak.Option{
	goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
	goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
}

// Check records the goroutines running now and registers a cleanup that fails t if goroutines started after
// this call are still running after the test (and the cleanups it registered later) ended. Tests that use it must
// not run in parallel with tests that start long-lived goroutines of their own.
func Check(t testing.TB) {
	t.Helper()
	opts := append([]goleak.Option{goleak.IgnoreCurrent()}, ignored...)
	t.Cleanup(func() {
		deadline := time.Now().Add(settle)
		for {
			err := goleak.Find(opts...)
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("leakcheck: goroutines left behind: %v", err)
				return
			}
		}
	})
}

// Remaining returns an error describing the goroutines still running, besides the test framework's own and idle
// net/http connections, once they had settle to exit: for TestMain, after m.Run, in a package whose tests run in
// parallel and so cannot use Check.
func Remaining() error {
	deadline := time.Now().Add(settle)
	for {
		err := goleak.Find(ignored...)
		if err == nil || time.Now().After(deadline) {
			return err
		}
	}
}
