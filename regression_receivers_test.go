package tool_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/tooltest"
)

// Review findings on the background receivers, each fixed; these keep them fixed.

func TestRegressionRenewalFailuresBackOff(t *testing.T) {
	_, srv, clock, obs := driveTask(t, "",
		tooltest.Response{Body: map[string]any{"resource_id": "res-1"}},
		tooltest.Response{Status: 503, Body: "try later"}) // every renewal fails
	obs.Wait(t, "subscription.created", 1)
	clock.BlockUntil(t, 1)
	clock.Advance(19*time.Hour + 12*time.Minute)
	obs.Wait(t, "subscription.failed", 1)
	// Retries 1s, 2s, then 4s after each failure. BlockUntil returns once a due retry re-armed its timer.
	for range 7 {
		clock.BlockUntil(t, 1)
		clock.Advance(time.Second)
	}
	clock.BlockUntil(t, 1)
	failed := obs.Wait(t, "subscription.failed", 4)
	var at []time.Duration
	for _, f := range failed {
		at = append(at, f.Time.Sub(failed[0].Time))
	}
	if want := []time.Duration{0, time.Second, 3 * time.Second, 7 * time.Second}; !slices.Equal(at, want) {
		t.Errorf("failed renewals at %v, want %v (1s, 2s, 4s backoff)", at, want)
	}
	if n := len(srv.Requests("/watch/doc-1")); n != 5 {
		t.Errorf("%d subscribe requests, want 5", n)
	}
}

func TestRegressionStaleChannelBacksOffAndLapses(t *testing.T) {
	srv := tooltest.NewServer(t)
	srv.Handle("POST", "/watch/doc-1", tooltest.Response{Body: map[string]any{"resource_id": "res-1"}})
	srv.Handle("POST", "/stop", tooltest.Response{Status: 500, Body: "try later"}) // 404 would mean "already gone"
	clock, obs := tooltest.NewClock(time.Time{}), tooltest.NewObserver()
	tl := driveTool(t, "", srv.URL, clock, obs, tool.WithLimits(tool.Limits{TeardownTimeout: 300 * time.Millisecond}))
	task, err := tl.NewTask(context.Background(), driveConfig)
	if err != nil {
		t.Fatal(err)
	}
	defer task.Close(context.Background())
	obs.Wait(t, "subscription.created", 1)
	clock.BlockUntil(t, 1)
	clock.Advance(19*time.Hour + 12*time.Minute)
	obs.Wait(t, "subscription.unsubscribe_failed", 1)
	for range 30 {
		clock.BlockUntil(t, 1)
		clock.Advance(time.Second)
	}
	clock.BlockUntil(t, 1) // the last due retry has run and re-armed
	if n := len(srv.Requests("/stop")); n > 5 {
		t.Errorf("the stale channel's unsubscribe was tried %d times in 30s: no backoff", n)
	}
	// Past the stale channel's own expiry (24h after it was created) it is dropped.
	for clock.Now().Before(tooltest.Epoch.Add(24*time.Hour + 10*time.Minute)) {
		clock.BlockUntil(t, 1)
		clock.Advance(5 * time.Minute)
	}
	lapsed := obs.Wait(t, "subscription.removed", 1)[0]
	if lapsed.Data["reason"] != "lapsed" {
		t.Errorf("subscription.removed = %v, want the stale channel lapsed", lapsed.Data)
	}
}

func TestRegressionCloseNotHeldBySlowSubscribe(t *testing.T) {
	tooltest.NoLeaks(t)
	release := make(chan struct{})
	arrived := make(chan struct{}, 1)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/watch/doc-1" {
			select {
			case arrived <- struct{}{}:
			default:
			}
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"resource_id":"r"}`))
	}))
	defer hs.Close()
	defer close(release)
	clock, obs := tooltest.NewClock(time.Time{}), tooltest.NewObserver()
	tl := driveTool(t, "", hs.URL, clock, obs, tool.WithLimits(tool.Limits{TeardownTimeout: 200 * time.Millisecond, CallTimeout: 5 * time.Second}))
	task, err := tl.NewTask(context.Background(), driveConfig)
	if err != nil {
		t.Fatal(err)
	}
	<-arrived // the subscribe is in flight
	start := time.Now()
	err = task.Close(context.Background())
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Close took %s: held by the in-flight subscribe beyond the 200ms teardown bound", took)
	}
	if err == nil || !strings.Contains(err.Error(), "in flight") {
		t.Errorf("Close = %v, want the abandoned subscribe reported", err)
	}
	if f := obs.Facts("subscription.abandoned"); len(f) != 1 {
		t.Errorf("subscription.abandoned facts = %v", f)
	}
}

func TestRegressionWatchdogRearmedByResume(t *testing.T) {
	src := manifestHeader("feed2") + `settings:
  properties:
    base_url: {type: string}
actions:
  - name: noop
    description: Does nothing.
    execute:
      cel:
        expression: "1"
events:
  - name: new_item
    description: A new feed item.
    message: "{event.payload.id}"
    timeout: 1h
    receive:
      poll:
        url: "{settings.base_url}/feed"
        detect: "response.items"
  - name: hook
    description: A webhook.
    message: "hook"
    timeout: 10h
    receive:
      webhook: {}
`
	srv := tooltest.NewServer(t)
	srv.Handle("GET", "/feed", tooltest.Response{Body: map[string]any{"items": []any{}}})
	clock, obs := tooltest.NewClock(time.Time{}), tooltest.NewObserver()
	tl := tooltest.Load(t, src, tool.WithClock(clock), tool.WithObserver(obs),
		tool.WithSettings(map[string]any{"base_url": srv.URL}), tool.WithLimits(tool.Limits{PollInterval: 10 * time.Minute}))
	task := tooltest.NewTask(t, tl, tool.TaskConfig{})
	obs.Wait(t, "poll.fetched", 1)
	clock.BlockUntil(t, 2)
	clock.Advance(61 * time.Minute)
	obs.Wait(t, "poll.stopped", 1)
	clock.BlockUntil(t, 1) // the watchdog, now waiting for hook's deadline at 10h
	clock.Advance(59 * time.Minute)
	if err := task.Resume(context.Background()); err != nil { // at 2h: new_item's deadline is 3h
		t.Fatal(err)
	}
	obs.Wait(t, "poll.fetched", 2)
	for range 7 { // to 3h10m, one poll interval at a time
		clock.BlockUntil(t, 2)
		clock.Advance(10 * time.Minute)
	}
	if f := obs.Wait(t, "poll.stopped", 2)[1]; f.Data["reason"] != "expired" {
		t.Errorf("poll.stopped = %v", f.Data)
	}
}

func TestRegressionSinkMayInterruptFromAPolledActivation(t *testing.T) {
	for _, passCtx := range []bool{true, false} {
		srv := tooltest.NewServer(t)
		srv.Handle("GET", "/feed/f1", items("a"), items("a", "b"))
		clock, obs := tooltest.NewClock(time.Time{}), tooltest.NewObserver()
		tl := tooltest.Load(t, feedManifest(), tool.WithClock(clock), tool.WithObserver(obs),
			tool.WithSettings(map[string]any{"base_url": srv.URL}), tool.WithLimits(tool.Limits{TeardownTimeout: time.Second}))
		var task *tool.Task
		ready, returned := make(chan struct{}), make(chan time.Duration, 1)
		sink := tool.SinkFunc(func(ctx context.Context, a tool.Activation) error {
			<-ready
			if !passCtx {
				ctx = context.Background()
			}
			start := time.Now()
			_ = task.Interrupt(ctx) // a one-shot listener
			returned <- time.Since(start)
			return nil
		})
		task = tooltest.NewTask(t, tl, tool.TaskConfig{Sink: sink, Capability: tool.Capability{Bindings: map[string]any{"feed": "f1"}}})
		close(ready)
		obs.Wait(t, "poll.fetched", 1)
		clock.BlockUntil(t, 1)
		clock.Advance(time.Minute)
		select {
		case took := <-returned:
			if passCtx && took > 500*time.Millisecond {
				t.Errorf("Interrupt with the Sink's ctx took %s, want no wait for its own poll", took)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Interrupt from the Sink (its own ctx: %t) has not returned after 5s", passCtx)
		}
	}
}
