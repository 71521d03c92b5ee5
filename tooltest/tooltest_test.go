package tooltest_test

import (
	"context"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/tooltest"
)

func TestClockFiresInDeadlineOrder(t *testing.T) {
	t.Parallel()
	c := tooltest.NewClock(time.Time{})
	start := c.Now()
	late, early, stopped := c.NewTimer(2*time.Second), c.NewTimer(time.Second), c.NewTimer(time.Second)
	if !stopped.Stop() || stopped.Stop() {
		t.Fatal("Stop must report true once, for a pending timer")
	}
	if c.Timers() != 2 {
		t.Fatalf("Timers = %d, want 2", c.Timers())
	}
	c.Advance(1500 * time.Millisecond)
	if got := <-early.C(); !got.Equal(start.Add(time.Second)) {
		t.Errorf("early fired at %v, want its deadline", got)
	}
	select {
	case <-late.C():
		t.Fatal("late fired before its deadline")
	default:
	}
	c.Advance(time.Second)
	if got := <-late.C(); !got.Equal(start.Add(2 * time.Second)) {
		t.Errorf("late fired at %v", got)
	}
	if !c.Now().Equal(start.Add(2500 * time.Millisecond)) {
		t.Errorf("Now = %v", c.Now())
	}
	select {
	case <-stopped.C():
		t.Error("a stopped timer fired")
	default:
	}
}

func TestClockResetAndZeroDelay(t *testing.T) {
	t.Parallel()
	c := tooltest.NewClock(time.Time{})
	now := c.NewTimer(0)
	select {
	case <-now.C():
	default:
		t.Fatal("a zero-delay timer must fire at once")
	}
	tm := c.NewTimer(time.Minute)
	if !tm.Reset(time.Hour) {
		t.Error("Reset of a pending timer reports false")
	}
	c.Advance(time.Minute)
	select {
	case <-tm.C():
		t.Fatal("fired at the old deadline after Reset")
	default:
	}
	c.Advance(time.Hour)
	<-tm.C()
}

func TestClockBlockUntil(t *testing.T) {
	t.Parallel()
	c := tooltest.NewClock(time.Time{})
	go func() {
		time.Sleep(10 * time.Millisecond)
		c.NewTimer(time.Second)
	}()
	c.BlockUntil(t, 1)
	if c.Timers() != 1 {
		t.Errorf("Timers = %d after BlockUntil(1)", c.Timers())
	}
}

func TestServerScriptsAndRecords(t *testing.T) {
	t.Parallel()
	srv := tooltest.NewServer(t)
	srv.Handle("GET", "/a b", tooltest.Response{Body: map[string]any{"n": 1}}, tooltest.Response{Status: 503, Body: "busy"})
	var statuses []int
	for range 3 {
		resp, err := http.Get(srv.URL + "/a%20b?x=1")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		statuses = append(statuses, resp.StatusCode)
	}
	resp, err := http.Get(srv.URL + "/unknown")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if want := []int{200, 503, 503}; !slices.Equal(statuses, want) || resp.StatusCode != 404 {
		t.Errorf("statuses = %v then %d, want %v then 404", statuses, resp.StatusCode, want)
	}
	reqs := srv.Wait(t, "/a b", 3)
	if reqs[0].RawPath != "/a%20b" || reqs[0].Query.Get("x") != "1" || len(srv.Requests()) != 4 {
		t.Errorf("recorded %+v", reqs[0])
	}
}

const manifest = `kind: commonagents.info/v1beta2/tool
namespace: test
name: hooks
description: Signed webhooks.
settings:
  properties:
    secret: {type: string, format: password}
actions:
  - name: noop
    description: Does nothing.
    execute:
      cel:
        expression: "1"
events:
  - name: pushed
    description: A push.
    message: "push {event.payload.n}"
    receive:
      webhook:
        secret: "{settings.secret}"
`

func TestSignerAndTaskHelpers(t *testing.T) {
	t.Parallel()
	sink := tooltest.NewSink()
	tl := tooltest.Load(t, manifest, tool.WithSettings(map[string]any{"secret": "whsec_c2VjcmV0LWtleQ=="}))
	task := tooltest.NewTask(t, tl, tool.TaskConfig{Sink: sink})
	s := tooltest.Signer{Secret: "whsec_c2VjcmV0LWtleQ=="}
	wrong := tooltest.Signer{Secret: "other"}
	ctx := context.Background()
	for _, in := range []*tool.Inbound{s.GitHub([]byte(`{"n":1}`), "d1"), s.Standard([]byte(`{"n":2}`), "msg_1", time.Now()),
		wrong.GitHub([]byte(`{"n":3}`), "d3")} {
		if _, err := task.Deliver(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, a := range sink.Wait(t, 2) {
		got = append(got, a.Message)
	}
	if want := []string{"push 1", "push 2"}; !slices.Equal(got, want) {
		t.Errorf("activations %q, want %q (the wrongly signed one discarded)", got, want)
	}
}

// TestReadmeFeedExample is the README's tooltest example, run against examples/feed-poll's manifest without its
// interval (so the host's default minute applies).
func TestReadmeFeedExample(t *testing.T) {
	tooltest.NoLeaks(t)
	src, err := os.ReadFile("../examples/feed-poll/feed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	manifest := strings.Replace(string(src), "        interval: 300ms\n", "", 1)
	srv := tooltest.NewServer(t)
	srv.Handle("GET", "/feeds/tech/items",
		tooltest.Response{Body: map[string]any{"items": []any{}}},
		tooltest.Response{Body: map[string]any{"items": []any{map[string]any{"id": 1, "title": "hi",
			"url": "https://news.example/p/1", "published_at": "2026-01-01T00:00:30Z", "draft": false}}}})
	clock, sink := tooltest.NewClock(time.Time{}), tooltest.NewSink()
	tl := tooltest.Load(t, manifest, tool.WithClock(clock), tool.WithSettings(map[string]any{"api": srv.URL}))
	tooltest.NewTask(t, tl, tool.TaskConfig{Sink: sink, Capability: tool.Capability{
		Bindings: map[string]any{"feed_id": "tech"}}})

	clock.BlockUntil(t, 1)
	clock.Advance(time.Minute)
	got := sink.Wait(t, 1)
	if got[0].Message != "New post: hi — https://news.example/p/1" {
		t.Errorf("message = %q", got[0].Message)
	}
}
