// Package tooltest is the test harness for hosts of this library, in the way net/http/httptest is for HTTP
// handlers: everything here is in-process and deterministic.
//
//   - Clock is a fake tool.Clock: time moves only when the test calls Advance, which fires the timers that fall
//     due in order — it drives polls, subscription renewals and event timeouts.
//   - Sink and Observer record activations and facts and let a test wait for them.
//   - Server is an HTTP stub on loopback that serves scripted responses and records every request.
//   - Signer produces webhook deliveries with valid GitHub or Standard Webhooks signatures.
//   - Load and NewTask load a manifest and start a task in one line, failing the test on error and closing the
//     task when the test ends.
//
// The waiting helpers (Sink.Wait, Observer.Wait, Server.Wait, Clock.BlockUntil) fail the test after Timeout.
package tooltest

import "time"

// Timeout bounds every wait of this package.
var Timeout = 10 * time.Second
