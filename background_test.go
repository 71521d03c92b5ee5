package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/tooltest"
)

// backgroundManifest is the start of a manifest whose one event (appended after it) works in the background:
// a base_url setting, a required bound parameter (none when param is "") and a no-op action.
func backgroundManifest(name, param string) string {
	params := ""
	if param != "" {
		params = "parameters:\n  properties:\n    " + param + ": {type: string, require_binding: true}\n"
	}
	return manifestHeader(name) + `settings:
  properties:
    base_url: {type: string}
` + params + `actions:
  - name: noop
    description: Does nothing.
    execute:
      cel:
        expression: "1"
events:
`
}

// driveManifest is a Google-Drive-like subscription event; extra is appended to the event.
func driveManifest(extra string) string {
	return backgroundManifest("drive", "document_id") + `  - name: edit
    description: A watched document was edited.
    message: "{event.payload.document_id} edited by {event.payload.editor}"
` + extra + `    receive:
      subscription:
        filter: "event.payload.document_id == parameters.document_id"
        subscribe:
          method: POST
          url: "{settings.base_url}/watch/{parameters.document_id}"
          headers:
            Authorization: "Bearer {auth.google()}"
          json:
            id: "{subscription.id}"
            type: web_hook
            address: "{runtime.api_root}/v1/webhooks/events/test/drive"
            expiration: "{subscription.expires_at_ms}"
        unsubscribe:
          method: POST
          url: "{settings.base_url}/stop"
          json:
            id: "{subscription.id}"
            resourceId: "{subscribe.resource_id}"
`
}

// driveTask starts a drive task against a stub; the stub's /watch answers with the given responses.
func driveTask(t *testing.T, extra string, watch ...tooltest.Response) (*tool.Task, *tooltest.Server, *tooltest.Clock, *tooltest.Observer) {
	t.Helper()
	srv := tooltest.NewServer(t)
	if len(watch) == 0 {
		watch = []tooltest.Response{{Body: map[string]any{"resource_id": "res-1"}}}
	}
	srv.Handle("POST", "/watch/doc-1", watch...)
	srv.Handle("POST", "/stop", tooltest.Response{Status: 204})
	clock, obs := tooltest.NewClock(time.Time{}), tooltest.NewObserver()
	tl := driveTool(t, extra, srv.URL, clock, obs, tool.WithRuntimeInfo(tool.RuntimeInfo{APIRoot: "https://agents.example"}))
	task := tooltest.NewTask(t, tl, driveConfig)
	return task, srv, clock, obs
}

// driveTool loads driveManifest(extra) against the service at baseURL, on clock, reporting to obs.
func driveTool(t *testing.T, extra, baseURL string, clock *tooltest.Clock, obs *tooltest.Observer, opts ...tool.Option) *tool.Tool {
	t.Helper()
	return tooltest.Load(t, driveManifest(extra), append([]tool.Option{tool.WithClock(clock), tool.WithObserver(obs),
		tool.WithSettings(map[string]any{"base_url": baseURL}), tool.WithAuth(tokens{"google": "tok-g"})}, opts...)...)
}

// driveConfig binds the drive task to doc-1.
var driveConfig = tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"document_id": "doc-1"}}}

// channels returns the subscription ids of the subscribe requests and those of the unsubscribe requests.
func channels(srv *tooltest.Server) (subscribed, unsubscribed []string) {
	for _, r := range srv.Requests() {
		body, _ := r.JSON().(map[string]any)
		id, _ := body["id"].(string)
		switch r.Path {
		case "/watch/doc-1":
			subscribed = append(subscribed, id)
		case "/stop":
			unsubscribed = append(unsubscribed, id)
		}
	}
	return subscribed, unsubscribed
}

var channelID = regexp.MustCompile(`^[0-9a-f]{32}$`)

func TestSubscriptionSubscribeRequest(t *testing.T) {
	tooltest.NoLeaks(t)
	task, srv, clock, obs := driveTask(t, "")
	req := srv.Wait(t, "/watch/doc-1", 1)[0]
	if got := req.Header.Get("Authorization"); got != "Bearer tok-g" {
		t.Errorf("Authorization = %q", got)
	}
	body, _ := req.JSON().(map[string]any)
	id, _ := body["id"].(string)
	if !channelID.MatchString(id) {
		t.Errorf("subscription.id = %q, want 32 hex digits", id)
	}
	want := map[string]any{"id": id, "type": "web_hook", "address": "https://agents.example/v1/webhooks/events/test/drive",
		// A field that is exactly one token keeps its JSON type: the expiry is a number of milliseconds.
		"expiration": float64(clock.Now().Add(24 * time.Hour).UnixMilli())}
	if fmt.Sprint(body) != fmt.Sprint(want) {
		t.Errorf("subscribe body = %v\nwant %v", body, want)
	}
	created := obs.Wait(t, "subscription.created", 1)[0]
	if created.Data["subscription_id"] != id || created.Data["event"] != "edit" {
		t.Errorf("subscription.created = %v", created.Data)
	}

	// Pushes arrive like webhooks, with the same filter.
	d, err := task.Deliver(context.Background(), &tool.Inbound{Body: []byte(`{"document_id":"doc-1","editor":"ann"}`)})
	if err != nil || len(d.Activations) != 1 || d.Activations[0].Message != "doc-1 edited by ann" {
		t.Fatalf("Deliver = %+v, %v", d, err)
	}
	d, err = task.Deliver(context.Background(), &tool.Inbound{Body: []byte(`{"document_id":"doc-2"}`)})
	if err != nil || len(d.Activations) != 0 || d.Discarded[0].Reason != tool.ReasonFilterFalse {
		t.Fatalf("Deliver of another document = %+v, %v", d, err)
	}

	if err := task.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	stop := srv.Requests("/stop")
	if len(stop) != 1 {
		t.Fatalf("%d unsubscribe requests after Close, want 1", len(stop))
	}
	if got := fmt.Sprint(stop[0].JSON()); got != fmt.Sprint(map[string]any{"id": id, "resourceId": "res-1"}) {
		t.Errorf("unsubscribe body = %s", got)
	}
	if clock.Timers() != 0 {
		t.Errorf("%d timers pending after Close", clock.Timers())
	}
}

func TestSubscriptionRenewal(t *testing.T) {
	tooltest.NoLeaks(t)
	task, srv, clock, obs := driveTask(t, "",
		tooltest.Response{Body: map[string]any{"resource_id": "res-1"}},
		tooltest.Response{Status: 503, Body: "try later"}, // the first renewal fails and is retried
		tooltest.Response{Body: map[string]any{"resource_id": "res-2"}})
	obs.Wait(t, "subscription.created", 1)
	clock.BlockUntil(t, 1)

	// Nothing happens before the renewal time (80% of the 24h TTL, up to 5% earlier).
	clock.Advance(18 * time.Hour)
	clock.BlockUntil(t, 1)
	if n := len(srv.Requests("/watch/doc-1")); n != 1 {
		t.Fatalf("%d subscribe requests at 18h, want 1", n)
	}
	clock.Advance(1*time.Hour + 12*time.Minute) // 19.2h: renewal due whatever the jitter
	failed := obs.Wait(t, "subscription.failed", 1)[0]
	if failed.Data["renewal"] != true || failed.Data["retry_in"] != "1s" {
		t.Errorf("subscription.failed = %v", failed.Data)
	}
	if n := len(srv.Requests("/stop")); n != 0 {
		t.Fatalf("the old channel was unsubscribed although its replacement failed (%d requests)", n)
	}
	clock.BlockUntil(t, 1)
	clock.Advance(time.Second)
	renewed := obs.Wait(t, "subscription.renewed", 1)[0]
	srv.Wait(t, "/stop", 1)

	subs, unsubs := channels(srv)
	if len(subs) != 3 || subs[0] == subs[2] || subs[1] == subs[2] {
		t.Fatalf("subscribe ids = %v, want three distinct", subs)
	}
	if renewed.Data["previous"] != subs[0] || renewed.Data["subscription_id"] != subs[2] {
		t.Errorf("subscription.renewed = %v", renewed.Data)
	}
	// Make-before-break: the old channel goes with its own subscribe.* values once the new one exists.
	stop := srv.Requests("/stop")[0]
	if got := fmt.Sprint(stop.JSON()); got != fmt.Sprint(map[string]any{"id": subs[0], "resourceId": "res-1"}) {
		t.Errorf("unsubscribe of the old channel = %s", got)
	}
	if err := task.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, unsubs = channels(srv)
	if !slices.Equal(unsubs, []string{subs[0], subs[2]}) {
		t.Errorf("unsubscribed %v, want %v", unsubs, []string{subs[0], subs[2]})
	}
	if got := fmt.Sprint(srv.Requests("/stop")[1].JSON()); got != fmt.Sprint(map[string]any{"id": subs[2], "resourceId": "res-2"}) {
		t.Errorf("unsubscribe at Close = %s", got)
	}
}

func TestSubscriptionInterruptResume(t *testing.T) {
	tooltest.NoLeaks(t)
	task, srv, _, obs := driveTask(t, "", tooltest.Response{Body: map[string]any{"resource_id": "res-1"}},
		tooltest.Response{Body: map[string]any{"resource_id": "res-2"}})
	obs.Wait(t, "subscription.created", 1)
	ctx := context.Background()
	if err := task.Interrupt(ctx); err != nil {
		t.Fatal(err)
	}
	// Interrupt returns once the channel is removed.
	subs, unsubs := channels(srv)
	if !slices.Equal(unsubs, subs) || len(subs) != 1 {
		t.Fatalf("after Interrupt: subscribed %v, unsubscribed %v", subs, unsubs)
	}
	if removed := obs.Wait(t, "subscription.removed", 1)[0]; removed.Data["reason"] != "interrupted" {
		t.Errorf("subscription.removed = %v", removed.Data)
	}
	if err := task.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	obs.Wait(t, "subscription.created", 2)
	if err := task.Close(ctx); err != nil {
		t.Fatal(err)
	}
	subs, unsubs = channels(srv)
	if len(subs) != 2 || subs[0] == subs[1] || !slices.Equal(unsubs, subs) {
		t.Errorf("subscribed %v, unsubscribed %v: every channel must be removed once", subs, unsubs)
	}
}

func TestSubscriptionExpiry(t *testing.T) {
	tooltest.NoLeaks(t)
	// The channel's TTL is capped by the event's 1h timeout: it is renewed at 48 min at the latest.
	task, srv, clock, obs := driveTask(t, "    timeout: 1h\n",
		tooltest.Response{Body: map[string]any{"resource_id": "res-1"}},
		tooltest.Response{Body: map[string]any{"resource_id": "res-2"}})
	t.Cleanup(func() {
		if t.Failed() {
			for _, f := range obs.Facts() {
				t.Log(f.Time.Format(time.TimeOnly), f.Name, f.Data)
			}

		}
	})
	req := srv.Wait(t, "/watch/doc-1", 1)[0]
	body, _ := req.JSON().(map[string]any)
	if want := float64(clock.Now().Add(time.Hour).UnixMilli()); body["expiration"] != want {
		t.Errorf("expiration = %v, want now + 1h = %v", body["expiration"], want)
	}
	obs.Wait(t, "subscription.created", 1)
	clock.BlockUntil(t, 2) // the renewal and the expiry watchdog
	clock.Advance(50 * time.Minute)
	obs.Wait(t, "subscription.renewed", 1)
	clock.BlockUntil(t, 2)
	clock.Advance(11 * time.Minute) // no activity for 61 minutes
	obs.Wait(t, "subscription.expired", 1)
	removed := obs.Wait(t, "subscription.removed", 2)
	if removed[1].Data["reason"] != "expired" {
		t.Errorf("subscription.removed = %v", removed[1].Data)
	}
	subs, unsubs := channels(srv)
	if len(subs) != 2 || !slices.Equal(unsubs, subs) {
		t.Errorf("subscribed %v, unsubscribed %v", subs, unsubs)
	}
	// The task stays usable; Resume subscribes again.
	if _, err := task.Invoke(context.Background(), "noop", nil); err != nil {
		t.Fatal(err)
	}
	if err := task.Resume(context.Background()); err != nil {
		t.Fatal(err)
	}
	obs.Wait(t, "subscription.created", 2)
}

// feedManifest is a poll event; detect returns every item, so the seen set alone keeps items from refiring.
func feedManifest() string {
	return backgroundManifest("feed", "feed") + `  - name: new_item
    description: A new feed item.
    message: "{event.title} ({event.payload.id})"
    receive:
      poll:
        url: "{settings.base_url}/feed/{parameters.feed}?since={poll.last_fetched_at}"
        detect: "response.items.filter(i, i.published_at >= '2000' && poll.last_fetched_at != '')"
        filter: "event.payload.kind != 'draft'"
        parameters:
          title: "item.title"
`
}

func item(id string) map[string]any {
	return map[string]any{"id": id, "title": "item " + id, "published_at": "2026-01-01T00:00:00Z", "kind": "post"}
}

func items(ids ...string) tooltest.Response {
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = item(id)
	}
	return tooltest.Response{Body: map[string]any{"items": out}}
}

func TestPoll(t *testing.T) {
	tooltest.NoLeaks(t)
	srv := tooltest.NewServer(t)
	draft := item("d")
	draft["kind"] = "draft"
	srv.Handle("GET", "/feed/f1",
		items("a"),      // 0s: baseline, not fired
		items("a", "b"), // 60s: b fires
		items("a", "b"), // 120s: nothing new
		tooltest.Response{Status: 500, Body: "down"},                                                    // 180s: fails, backs off 2 intervals
		tooltest.Response{Body: map[string]any{"items": []any{item("a"), item("b"), item("c"), draft}}}, // 300s: c fires
		items("b", "c"), // 360s: b and c appear a third time: nothing
	)
	clock, obs, sink := tooltest.NewClock(time.Time{}), tooltest.NewObserver(), tooltest.NewSink()
	start := clock.Now()
	tl := tooltest.Load(t, feedManifest(), tool.WithClock(clock), tool.WithObserver(obs),
		tool.WithSettings(map[string]any{"base_url": srv.URL}))
	tooltest.NewTask(t, tl, tool.TaskConfig{Sink: sink, Capability: tool.Capability{Bindings: map[string]any{"feed": "f1"}}})

	fetched := 1
	// next advances the clock to the next poll and returns its fact: poll.fetched or poll.failed.
	next := func(advance time.Duration, fact string) tool.Fact {
		t.Helper()
		clock.BlockUntil(t, 1)
		clock.Advance(advance)
		if fact == "poll.failed" {
			return obs.Wait(t, fact, 1)[0]
		}
		fetched++
		return obs.Wait(t, fact, fetched)[fetched-1]
	}
	if f := obs.Wait(t, "poll.fetched", 1)[0]; f.Data["baseline"] != true || f.Data["fired"] != 0 {
		t.Errorf("first poll = %v, want a baseline that fires nothing", f.Data)
	}
	if f := next(time.Minute, "poll.fetched"); f.Data["fired"] != 1 {
		t.Errorf("second poll = %v", f.Data)
	}
	next(time.Minute, "poll.fetched")
	if f := next(time.Minute, "poll.failed"); f.Data["retry_in"] != "2m0s" {
		t.Errorf("failed poll = %v, want a retry in two intervals", f.Data)
	}
	if f := next(2*time.Minute, "poll.fetched"); f.Data["fired"] != 1 || f.Data["discarded"] != 1 {
		t.Errorf("poll after the failure = %v, want c fired and the draft discarded", f.Data)
	}
	if f := next(time.Minute, "poll.fetched"); f.Data["fired"] != 0 || f.Data["discarded"] != 0 {
		t.Errorf("last poll = %v, want nothing new", f.Data)
	}

	got := sink.Activations()
	var messages []string
	for _, a := range got {
		messages = append(messages, a.Message)
	}
	if want := []string{"item b (b)", "item c (c)"}; !slices.Equal(messages, want) {
		t.Errorf("activations = %q, want %q (baseline not fired, each new item once, drafts filtered)", messages, want)
	}
	if len(got) > 0 && (got[0].Event != "new_item" || got[0].Parameters["feed"] != "f1" || !got[0].ReceivedAt.Equal(start.Add(time.Minute))) {
		t.Errorf("activation = %+v", got[0])
	}
	// poll.last_fetched_at: the start time for the first poll, then the last successful fetch; the failed fetch
	// at 180s does not move it.
	var since []string
	for _, r := range srv.Requests("/feed/f1") {
		since = append(since, r.Query.Get("since"))
	}
	at := func(s int) string { return start.Add(time.Duration(s) * time.Second).Format("2006-01-02T15:04:05Z") }
	if want := []string{at(0), at(0), at(60), at(120), at(120), at(300)}; !slices.Equal(since, want) {
		t.Errorf("since = %q\nwant    %q", since, want)
	}
}

func TestPollRefusedItemIsOfferedAgain(t *testing.T) {
	tooltest.NoLeaks(t)
	srv := tooltest.NewServer(t)
	srv.Handle("GET", "/feed/f1", items(), items("a"), items("a"))
	clock, obs, sink := tooltest.NewClock(time.Time{}), tooltest.NewObserver(), tooltest.NewSink()
	tl := tooltest.Load(t, feedManifest(), tool.WithClock(clock), tool.WithObserver(obs),
		tool.WithSettings(map[string]any{"base_url": srv.URL}))
	tooltest.NewTask(t, tl, tool.TaskConfig{Sink: sink, Capability: tool.Capability{Bindings: map[string]any{"feed": "f1"}}})
	obs.Wait(t, "poll.fetched", 1)
	sink.Refuse(errors.New("host busy"))
	clock.BlockUntil(t, 1)
	clock.Advance(time.Minute)
	if f := obs.Wait(t, "poll.fetched", 2)[1]; f.Data["refused"] != 1 {
		t.Fatalf("second poll = %v, want one refused item", f.Data)
	}
	sink.Refuse(nil)
	clock.BlockUntil(t, 1)
	clock.Advance(time.Minute)
	if a := sink.Wait(t, 1); a[0].Payload.(map[string]any)["id"] != "a" {
		t.Errorf("activation = %+v", a[0])
	}
	reqs := srv.Requests("/feed/f1")
	if reqs[2].Query.Get("since") != reqs[1].Query.Get("since") {
		t.Errorf("a poll whose item was refused moved the watermark: %q then %q",
			reqs[1].Query.Get("since"), reqs[2].Query.Get("since"))
	}
}

func TestPollInterruptRebaselines(t *testing.T) {
	tooltest.NoLeaks(t)
	srv := tooltest.NewServer(t)
	srv.Handle("GET", "/feed/f1", items("a"), items("a", "b"), items("a", "b", "c"))
	clock, obs, sink := tooltest.NewClock(time.Time{}), tooltest.NewObserver(), tooltest.NewSink()
	tl := tooltest.Load(t, feedManifest(), tool.WithClock(clock), tool.WithObserver(obs),
		tool.WithSettings(map[string]any{"base_url": srv.URL}))
	task := tooltest.NewTask(t, tl, tool.TaskConfig{Sink: sink, Capability: tool.Capability{Bindings: map[string]any{"feed": "f1"}}})
	obs.Wait(t, "poll.fetched", 1)
	ctx := context.Background()
	if err := task.Interrupt(ctx); err != nil {
		t.Fatal(err)
	}
	if clock.Timers() != 0 {
		t.Fatalf("%d timers pending while interrupted", clock.Timers())
	}
	clock.Advance(time.Hour)
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("%d fetches, want none while interrupted", n-1)
	}
	if err := task.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	// What appeared while interrupted does not pile up: the first poll after Resume baselines again.
	if f := obs.Wait(t, "poll.fetched", 2)[1]; f.Data["baseline"] != true {
		t.Errorf("poll after Resume = %v, want a baseline", f.Data)
	}
	clock.BlockUntil(t, 1)
	clock.Advance(time.Minute)
	if a := sink.Wait(t, 1); len(a) != 1 || a[0].Message != "item c (c)" {
		t.Errorf("activations = %+v", a)
	}
}

func TestSubscriptionUnsubscribeFailureDoesNotHoldClose(t *testing.T) {
	tooltest.NoLeaks(t)
	srv := tooltest.NewServer(t)
	srv.Handle("POST", "/watch/doc-1", tooltest.Response{Body: map[string]any{"resource_id": "res-1"}})
	srv.Handle("POST", "/stop", tooltest.Response{Status: 500, Body: "broken"})
	clock, obs := tooltest.NewClock(time.Time{}), tooltest.NewObserver()
	tl := driveTool(t, "", srv.URL, clock, obs, tool.WithLimits(tool.Limits{TeardownTimeout: 400 * time.Millisecond}))
	task, err := tl.NewTask(context.Background(), driveConfig)
	if err != nil {
		t.Fatal(err)
	}
	obs.Wait(t, "subscription.created", 1)
	start := time.Now()
	err = task.Close(context.Background())
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Close took %s with a failing unsubscribe, want about the teardown bound", took)
	}
	if err == nil || !strings.Contains(err.Error(), "unsubscribe") {
		t.Errorf("Close = %v, want the unsubscribe failure", err)
	}
	if n := len(srv.Requests("/stop")); n < 2 {
		t.Errorf("%d unsubscribe attempts, want retries within the bound", n)
	}
	if f := obs.Facts("subscription.unsubscribe_failed"); len(f) == 0 || f[0].Data["reason"] != "closed" {
		t.Errorf("unsubscribe_failed facts = %v", f)
	}
}

// Two replicas share one poll through the lease: an item fires once, even when the holder's Sink takes longer
// than the lease's ttl (the holder's heartbeat keeps the lease).
func TestPollLeaseSurvivesASlowSink(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	fetches := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		fetches["all"]++
		n := fetches["all"]
		mu.Unlock()
		out := []any{}
		if n > 1 {
			out = append(out, item("x"))
		}
		json.NewEncoder(w).Encode(map[string]any{"items": out})
	}))
	defer srv.Close()
	store := tool.NewMemoryStore()
	load := func(replica string, obs *tooltest.Observer) *tool.Tool {
		return tooltest.Load(t, feedManifest(), tool.WithStore(store), tool.WithReplicaID(replica), tool.WithObserver(obs),
			tool.WithSettings(map[string]any{"base_url": srv.URL}),
			// The lease's ttl is 2 poll intervals plus the call timeout: 1.2s, renewed every 400ms, so that a busy
			// machine delaying r1's heartbeat by most of a second does not hand the lease to r2.
			tool.WithLimits(tool.Limits{PollInterval: 100 * time.Millisecond, CallTimeout: time.Second}))
	}
	var fired atomic.Int32
	inSink, release := make(chan struct{}), make(chan struct{})
	slow := tool.SinkFunc(func(ctx context.Context, a tool.Activation) error {
		fired.Add(1)
		close(inSink)
		<-release // held well past the 1.2s lease ttl
		return nil
	})
	ctx := context.Background()
	obs1, obs2 := tooltest.NewObserver(), tooltest.NewObserver()
	cfg := tool.TaskConfig{ID: "t1", Sink: slow, Capability: tool.Capability{Bindings: map[string]any{"feed": "f1"}}}
	first, err := load("r1", obs1).NewTask(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close(ctx)
	obs1.Wait(t, "poll.fetched", 1) // r1 holds the lease and baselined
	cfg.Sink = tool.SinkFunc(func(ctx context.Context, a tool.Activation) error { fired.Add(1); return nil })
	second, err := load("r2", obs2).RestoreTask(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Detach(ctx)
	select {
	case <-inSink:
	case <-time.After(time.Minute):
		t.Fatalf("item x did not reach r1's Sink in a minute (fired %d times)", fired.Load())
	}
	// While r1's Sink holds x, r2 keeps trying: its steps find the lease held (no fetch, no fact) for as long as
	// the heartbeat renews it. Hold the Sink over several ttls, measured by r1's heartbeat on the wall clock.
	deadline := time.Now().Add(2500 * time.Millisecond)
	for time.Now().Before(deadline) {
		if len(obs2.Facts("poll.fetched")) > 0 {
			t.Fatal("r2 polled while r1 held the lease in a slow Sink")
		}
		time.Sleep(10 * time.Millisecond) // polling r2's facts over the span, not waiting for an event
	}
	close(release)
	obs1.Wait(t, "poll.fetched", 2) // r1 records x as seen
	if n := fired.Load(); n != 1 {
		t.Errorf("item x fired %d times across two replicas, want once", n)
	}
}

// untilRenewal waits for the first channel and moves the clock to its renewal: 80 % of its 24 h.
func untilRenewal(t *testing.T, clock *tooltest.Clock, obs *tooltest.Observer) {
	t.Helper()
	obs.Wait(t, "subscription.created", 1)
	clock.BlockUntil(t, 1)
	clock.Advance(19*time.Hour + 12*time.Minute)
}

func TestRenewalFailuresBackOff(t *testing.T) {
	_, srv, clock, obs := driveTask(t, "",
		tooltest.Response{Body: map[string]any{"resource_id": "res-1"}},
		tooltest.Response{Status: 503, Body: "try later"}) // every renewal fails
	untilRenewal(t, clock, obs)
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

func TestStaleChannelBacksOffAndLapses(t *testing.T) {
	t.Parallel()
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
	untilRenewal(t, clock, obs)
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

func TestCloseIsNotHeldBySlowSubscribe(t *testing.T) {
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

func TestResumeRearmsTheWatchdog(t *testing.T) {
	src := backgroundManifest("feed2", "") + `  - name: new_item
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

func TestSinkMayInterruptFromAPolledActivation(t *testing.T) {
	t.Parallel()
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
