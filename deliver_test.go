package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/events/webhook"
	"github.com/commonagents-go/tool/store"
)

// manualClock is a clock tests move by hand.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func newManualClock() *manualClock {
	return &manualClock{now: time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)}
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func (c *manualClock) NewTimer(d time.Duration) tool.Timer { return tool.SystemClock{}.NewTimer(d) }

const hookSecret = "czNjcmV0LWhvb2sta2V5" // base64, as Standard Webhooks secrets are; GitHub uses it as text

// signed is a GitHub-style delivery of body, signed with secret.
func signed(secret, id, body string) *tool.Inbound {
	h := http.Header{}
	h.Set("X-Hub-Signature-256", webhook.SignGitHub([]byte(secret), []byte(body)))
	h.Set("X-GitHub-Event", "issues")
	if id != "" {
		h.Set("X-GitHub-Delivery", id)
	}
	return &tool.Inbound{Headers: h, Body: []byte(body)}
}

// rewriteHost sends every request to srv, keeping path and query: the manifest's real API host never sees it.
type rewriteHost struct{ target *url.URL }

func (r rewriteHost) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.URL.Scheme, req.URL.Host = r.target.Scheme, r.target.Host
	return http.DefaultTransport.RoundTrip(req)
}

// issueTracker loads testdata/ok/issue-tracker.yaml against an in-process GitHub that records created issues.
func issueTracker(t *testing.T, opts ...tool.Option) *tool.Tool {
	t.Helper()
	return issueTrackerNamed(t, "issue-tracker", opts...)
}

// issueTrackerNamed is issueTracker with another tool name (namespace engineering).
func issueTrackerNamed(t *testing.T, name string, opts ...tool.Option) *tool.Tool {
	t.Helper()
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"html_url": "https://github.com/o/r/issues/1"}`)
	})
	target, _ := url.Parse(srv.URL)
	src, err := os.ReadFile("testdata/ok/issue-tracker.yaml")
	if err != nil {
		t.Fatal(err)
	}
	opts = append([]tool.Option{tool.WithSettings(map[string]any{"webhook_secret": hookSecret}),
		tool.WithHTTPClient(&http.Client{Transport: rewriteHost{target}}), tool.WithAuth(tokens{"github": "ghp_test"})}, opts...)
	return mustLoadSrc(t, strings.Replace(string(src), `name: "issue-tracker"`, `name: "`+name+`"`, 1), opts...)
}

func assigned(repoID int, login string) string {
	return fmt.Sprintf(`{"action":"assigned","issue":{"number":7,"title":"Flaky test","html_url":"https://github.com/o/r/issues/7"},`+
		`"assignee":{"login":%q},"repository":{"id":%d}}`, login, repoID)
}

// deliver delivers in and fails the test on an error.
func deliver(t *testing.T, task *tool.Task, in *tool.Inbound) *tool.Delivery {
	t.Helper()
	d, err := task.Deliver(context.Background(), in)
	if err != nil {
		t.Fatalf("Deliver: %v", err)
	}
	return d
}

// outcome summarises a Delivery as "event:activated" or "event:<reason>" items.
func outcome(d *tool.Delivery) []string {
	var out []string
	for _, a := range d.Activations {
		out = append(out, a.Event+":activated")
	}
	for _, x := range d.Discarded {
		out = append(out, x.Event+":"+x.Reason)
	}
	slices.Sort(out)
	return out
}

func wantOutcome(t *testing.T, d *tool.Delivery, want ...string) {
	t.Helper()
	slices.Sort(want)
	if got := outcome(d); !slices.Equal(got, want) {
		t.Fatalf("delivery = %v, want %v (discards: %+v)", got, want, d.Discarded)
	}
}

// The walkthrough of the spec's parameters page: assignee starts empty; create_issue grows it.
func TestDeliverAllowListWalkthrough(t *testing.T) {
	t.Parallel()
	tl := issueTracker(t)
	var accepted []tool.Activation
	var mu sync.Mutex
	sink := tool.SinkFunc(func(_ context.Context, a tool.Activation) error {
		mu.Lock()
		defer mu.Unlock()
		accepted = append(accepted, a)
		return nil
	})
	task := newTask(t, tl, tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo_id": 4242}}, Sink: sink})

	d := deliver(t, task, signed(hookSecret, "", assigned(4242, "alice")))
	wantOutcome(t, d, "issue_assigned:empty_allow_list")
	if !strings.Contains(d.Discarded[0].Detail, "assignee") {
		t.Errorf("detail %q does not name the empty parameter", d.Discarded[0].Detail)
	}

	mustInvoke(t, task, "create_issue", map[string]any{"title": "Fix it", "assignee": "alice"})
	wantOutcome(t, deliver(t, task, signed(hookSecret, "", assigned(4242, "alice"))), "issue_assigned:activated")
	wantOutcome(t, deliver(t, task, signed(hookSecret, "", assigned(4242, "bob"))), "issue_assigned:filter_false")

	mustInvoke(t, task, "create_issue", map[string]any{"title": "And this", "assignee": "bob"})
	wantOutcome(t, deliver(t, task, signed(hookSecret, "", assigned(4242, "alice"))), "issue_assigned:activated")
	wantOutcome(t, deliver(t, task, signed(hookSecret, "", assigned(4242, "bob"))), "issue_assigned:activated")

	// The repository is bound: another repository's events never route, whatever the assignee.
	wantOutcome(t, deliver(t, task, signed(hookSecret, "", assigned(999, "alice"))), "issue_assigned:filter_false")

	mu.Lock()
	defer mu.Unlock()
	if len(accepted) != 3 {
		t.Fatalf("sink got %d activations, want 3", len(accepted))
	}
	a := accepted[2]
	wantMsg := `Issue #7 "Flaky test" was assigned to bob: https://github.com/o/r/issues/7`
	if a.Message != wantMsg || a.Event != "issue_assigned" || a.TaskID != task.ID() || a.Tool != "issue-tracker" {
		t.Errorf("activation = %+v\nwant message %q", a, wantMsg)
	}
	if a.Parameters["assignee"] != "bob" || fmt.Sprint(a.Parameters["repo_id"]) != "4242" {
		t.Errorf("activation parameters = %v, want the matching assignee and the binding", a.Parameters)
	}
}

// A bound parameter's entry is sealed: calls never add to it, even when the LLM passes a value.
func TestDeliverSealedBindingNeverGrows(t *testing.T) {
	t.Parallel()
	task := newTask(t, issueTracker(t), tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo_id": 4242}}})
	res := mustInvoke(t, task, "create_issue", map[string]any{"title": "x", "assignee": "alice", "repo_id": 999})
	if res.IsError {
		t.Fatalf("create_issue: %+v", res.Error)
	}
	if got := task.AllowList()["repo_id"]; !slices.Equal(got, []string{"4242"}) {
		t.Errorf("repo_id allow list = %v, want [4242]", got)
	}
	wantOutcome(t, deliver(t, task, signed(hookSecret, "", assigned(999, "alice"))), "issue_assigned:filter_false")
	wantOutcome(t, deliver(t, task, signed(hookSecret, "", assigned(4242, "alice"))), "issue_assigned:activated")
}

// repoEvents is a tool with two signed webhook events, a poll event and an action that grows `label`.
func repoEvents(extra string) string {
	return manifestHeader("repo-events") + `settings:
  properties:
    secret: {type: string, format: password}
parameters:
  properties:
    repo: {type: string, require_binding: true}
actions:
  - name: watch_label
    description: Watches a label.
    parameters:
      properties:
        label: {type: string}
    execute:
      cel:
        expression: "'watching ' + input.label"
events:
  - name: labeled
    description: A watched label was added.
    timeout: 1h
    max_timeout: 2h
    message: "{event.payload.label.name} on {parameters.repo} by {event.sender} ({event.headers['x-github-event']})"
    parameters:
      properties:
        label: {type: string}
    receive:
      webhook:
        secret: "{settings.secret}"
        filter: "event.payload.repository.full_name == parameters.repo && event.payload.label.name == parameters.label"
        parameters:
          sender: "event.payload.sender.login"
  - name: pushed
    description: Commits were pushed.
    message: "push to {event.payload.ref}"
    receive:
      webhook:
        secret: "{settings.secret}"
        filter: "event.payload.repository.full_name == parameters.repo && event.payload.ref.startsWith('refs/')"
  - name: releases
    description: A release feed.
    message: "release {event.payload.tag}"
    receive:
      poll:
        url: "https://example.com/releases"
        detect: "response.items"
` + extra
}

func repoTool(t *testing.T, opts ...tool.Option) *tool.Tool {
	t.Helper()
	return mustLoadSrc(t, repoEvents(""), append([]tool.Option{tool.WithSettings(map[string]any{"secret": hookSecret})}, opts...)...)
}

const pushBody = `{"ref":"refs/heads/main","repository":{"full_name":"o/r"}}`

func TestDeliverSignatures(t *testing.T) {
	t.Parallel()
	clock := newManualClock()
	tl := repoTool(t, tool.WithClock(clock))
	task := newTask(t, tl, tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}})
	std := func(secret string, at time.Time, body string) *tool.Inbound {
		return &tool.Inbound{Headers: webhook.SignStandard([]byte(secret), "msg_"+at.Format("150405.000"), at, []byte(body)),
			Body: []byte(body)}
	}
	tampered := signed(hookSecret, "", pushBody)
	tampered.Body = []byte(strings.Replace(pushBody, "main", "evil", 1))
	missing := signed(hookSecret, "", pushBody)
	missing.Headers.Del("X-Hub-Signature-256")
	tests := []struct {
		name string
		in   *tool.Inbound
		want string // outcome of the pushed event
	}{
		{"github signature", signed(hookSecret, "", pushBody), "activated"},
		{"wrong secret", signed("not-the-secret", "", pushBody), "bad_signature"},
		{"missing header", missing, "bad_signature"},
		{"tampered body", tampered, "bad_signature"},
		{"standard webhooks", std(hookSecret, clock.Now(), pushBody), "activated"},
		{"standard webhooks, stale timestamp", std(hookSecret, clock.Now().Add(-6*time.Minute), pushBody), "bad_signature"},
		{"standard webhooks, wrong secret", std("other", clock.Now(), pushBody), "bad_signature"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := deliver(t, task, tt.in)
			wantOutcome(t, d, "pushed:"+tt.want, "labeled:"+map[string]string{"activated": "empty_allow_list"}[tt.want]+
				map[bool]string{true: "bad_signature"}[tt.want == "bad_signature"])
			for _, x := range d.Discarded {
				if strings.Contains(x.Detail, hookSecret) {
					t.Errorf("discard detail %q holds the secret", x.Detail)
				}
			}
		})
	}
}

func TestDeliverDuplicateDeliveryID(t *testing.T) {
	t.Parallel()
	clock := newManualClock()
	tl := repoTool(t, tool.WithClock(clock), tool.WithLimits(tool.Limits{DedupeWindow: time.Hour}))
	task := newTask(t, tl, tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}})
	first := deliver(t, task, signed(hookSecret, "d-1", pushBody))
	wantOutcome(t, first, "pushed:activated", "labeled:empty_allow_list")
	if first.Activations[0].DeliveryID != "d-1" {
		t.Errorf("DeliveryID = %q, want d-1", first.Activations[0].DeliveryID)
	}
	wantOutcome(t, deliver(t, task, signed(hookSecret, "d-1", pushBody)), "pushed:duplicate", "labeled:empty_allow_list")
	wantOutcome(t, deliver(t, task, signed(hookSecret, "d-2", pushBody)), "pushed:activated", "labeled:empty_allow_list")
	// An explicit DeliveryID wins over the header.
	in := signed(hookSecret, "d-3", pushBody)
	in.DeliveryID = "d-2"
	wantOutcome(t, deliver(t, task, in), "pushed:duplicate", "labeled:empty_allow_list")

	clock.Advance(61 * time.Minute) // past the window: the id may activate again (and `labeled` timed out)
	wantOutcome(t, deliver(t, task, signed(hookSecret, "d-1", pushBody)), "pushed:activated", "labeled:expired")
}

// A task keeps no memory per delivery id it activated: the Store, which expires the records after the window,
// holds them (a task of a busy repository takes thousands a day; issue 41's soak found them piling up). The
// Store here keeps the records out of this process's heap, as PostgreSQL does. Not parallel: it reads the live
// heap.
func TestDeliveryIDsAreNotKeptInMemory(t *testing.T) {
	tl := repoTool(t, tool.WithStore(recordsElsewhere{tool.NewMemoryStore().(store.ExpiringStore)}))
	task := newTask(t, tl, tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}})
	live := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := live()
	const n = 4_000
	for i := range n {
		if d := deliver(t, task, signed(hookSecret, fmt.Sprint("d-", i), pushBody)); len(d.Activations) != 1 {
			t.Fatalf("%+v, want one activation", d)
		}
	}
	// Each id kept cost its key and its time, about 120 bytes: half a megabyte for these.
	if grown := int64(live()) - int64(before); grown > 200_000 {
		t.Errorf("the live heap grew by %d bytes over %d deliveries: %d per delivery, want none kept", grown, n, grown/n)
	}
	runtime.KeepAlive(task)
}

// recordsElsewhere is an expiring Store that keeps the delivery ids' records out of the heap: it drops them, and
// finds none.
type recordsElsewhere struct{ store.ExpiringStore }

func (s recordsElsewhere) Put(ctx context.Context, key string, value []byte) error {
	return s.PutTTL(ctx, key, value, 0)
}

func (s recordsElsewhere) PutTTL(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if strings.Contains(key, "/deliveries/") {
		return nil
	}
	if ttl == 0 {
		return s.ExpiringStore.Put(ctx, key, value)
	}
	return s.ExpiringStore.PutTTL(ctx, key, value, ttl)
}

// A tool whose event names no secret is verified with the host's fallback secret, by a host verifier when its
// header is present.
func TestDeliverFallbackSecretAndHostVerifier(t *testing.T) {
	t.Parallel()
	src := manifestHeader("unsigned") + `events:
  - name: ping
    description: A ping.
    message: "ping {event.payload.n}"
    receive:
      webhook: {}
`
	body := `{"n": 1}`
	plain := &tool.Inbound{Body: []byte(body)}
	t.Run("no secret anywhere: unsigned payloads pass", func(t *testing.T) {
		task := newTask(t, mustLoadSrc(t, src), tool.TaskConfig{})
		d := deliver(t, task, plain)
		wantOutcome(t, d, "ping:activated")
		if d.Activations[0].Message != "ping 1" {
			t.Errorf("message = %q", d.Activations[0].Message)
		}
	})
	t.Run("fallback secret", func(t *testing.T) {
		task := newTask(t, mustLoadSrc(t, src, tool.WithWebhookSecret("host-secret")), tool.TaskConfig{})
		wantOutcome(t, deliver(t, task, plain), "ping:bad_signature")
		wantOutcome(t, deliver(t, task, signed("host-secret", "", body)), "ping:activated")
	})
	t.Run("host verifier", func(t *testing.T) {
		v := tokenVerifier{}
		task := newTask(t, mustLoadSrc(t, src, tool.WithWebhookSecret("host-secret"), tool.WithWebhookVerifiers(v)), tool.TaskConfig{})
		in := &tool.Inbound{Headers: http.Header{"X-Token": {"host-secret"}}, Body: []byte(body)}
		wantOutcome(t, deliver(t, task, in), "ping:activated")
		in.Headers.Set("X-Token", "guess")
		wantOutcome(t, deliver(t, task, in), "ping:bad_signature")
	})
}

// tokenVerifier accepts requests whose X-Token header is the secret itself (a shared-token scheme).
type tokenVerifier struct{}

func (tokenVerifier) Applies(h http.Header) bool { return h.Get("X-Token") != "" }

func (tokenVerifier) Verify(secret []byte, s *webhook.Signed) error {
	if s.Header.Get("X-Token") != string(secret) {
		return fmt.Errorf("%w: token mismatch", webhook.ErrBadSignature)
	}
	return nil
}

func TestDeliverPipeline(t *testing.T) {
	t.Parallel()
	tl := repoTool(t, tool.WithLimits(tool.Limits{InboundBytes: 512}))
	task := newTask(t, tl, tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}})
	mustInvoke(t, task, "watch_label", map[string]any{"label": "bug"})
	labeled := `{"label":{"name":"bug"},"repository":{"full_name":"o/r"},"sender":{"login":"carol"}}`

	t.Run("message with extraction and header", func(t *testing.T) {
		d := deliver(t, task, signed(hookSecret, "", labeled))
		wantOutcome(t, d, "labeled:activated", "pushed:filter_false") // a labeled payload has no ref
		if got, want := d.Activations[0].Message, "bug on o/r by carol (issues)"; got != want {
			t.Errorf("message = %q, want %q", got, want)
		}
		if !strings.Contains(d.Discarded[0].Detail, "no such key: ref") {
			t.Errorf("filter_false detail %q does not name the missing field", d.Discarded[0].Detail)
		}
	})
	t.Run("only the named event", func(t *testing.T) {
		in := signed(hookSecret, "", labeled)
		in.Event = "labeled"
		wantOutcome(t, deliver(t, task, in), "labeled:activated")
	})
	t.Run("unknown event", func(t *testing.T) {
		in := signed(hookSecret, "", labeled)
		in.Event = "nope"
		if _, err := task.Deliver(context.Background(), in); !errors.Is(err, tool.ErrUnknownEvent) {
			t.Errorf("err = %v, want ErrUnknownEvent", err)
		}
	})
	t.Run("poll event named", func(t *testing.T) {
		in := signed(hookSecret, "", labeled)
		in.Event = "releases"
		wantOutcome(t, deliver(t, task, in), "releases:misconfigured")
	})
	t.Run("too large", func(t *testing.T) {
		big := `{"pad":"` + strings.Repeat("x", 600) + `"}`
		if _, err := task.Deliver(context.Background(), signed(hookSecret, "", big)); !errors.Is(err, tool.ErrPayloadTooLarge) {
			t.Errorf("err = %v, want ErrPayloadTooLarge", err)
		}
	})
	t.Run("text body", func(t *testing.T) {
		d := deliver(t, task, signed(hookSecret, "", "not json"))
		wantOutcome(t, d, "labeled:filter_false", "pushed:filter_false") // text has no fields
	})
	t.Run("excluded", func(t *testing.T) {
		only := newTask(t, tl, tool.TaskConfig{Capability: tool.Capability{Include: []string{"pushed"},
			Bindings: map[string]any{"repo": "o/r"}}})
		wantOutcome(t, deliver(t, only, signed(hookSecret, "", pushBody)), "pushed:activated", "labeled:excluded")
	})
	t.Run("closed task", func(t *testing.T) {
		gone := newTask(t, tl, tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}})
		_ = gone.Close(context.Background())
		if _, err := gone.Deliver(context.Background(), signed(hookSecret, "", pushBody)); !errors.Is(err, tool.ErrClosed) {
			t.Errorf("err = %v, want ErrClosed", err)
		}
	})
}

func TestDeliverSinkRefusalIsRetried(t *testing.T) {
	t.Parallel()
	var refuse sync.Mutex
	refusing := true
	sink := tool.SinkFunc(func(context.Context, tool.Activation) error {
		refuse.Lock()
		defer refuse.Unlock()
		if refusing {
			return errors.New("queue full")
		}
		return nil
	})
	task := newTask(t, repoTool(t), tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}, Sink: sink})
	d, err := task.Deliver(context.Background(), signed(hookSecret, "d-9", pushBody))
	if !errors.Is(err, tool.ErrNotAccepted) || !strings.Contains(err.Error(), "queue full") {
		t.Fatalf("err = %v, want ErrNotAccepted with the sink's error", err)
	}
	if d == nil || len(d.Activations) != 0 {
		t.Fatalf("delivery = %+v, want no accepted activation", d)
	}
	refuse.Lock()
	refusing = false
	refuse.Unlock()
	// The refused delivery id was not recorded: the sender's retry activates.
	wantOutcome(t, deliver(t, task, signed(hookSecret, "d-9", pushBody)), "pushed:activated", "labeled:empty_allow_list")
	wantOutcome(t, deliver(t, task, signed(hookSecret, "d-9", pushBody)), "pushed:duplicate", "labeled:empty_allow_list")
}

func TestEventTimeouts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cap     time.Duration
		hostMax time.Duration
		want    time.Duration // the event `labeled` has timeout 1h, max_timeout 2h
		pushed  time.Duration // the event `pushed` has neither
	}{
		{"event default", 0, 0, time.Hour, 0},
		{"capability within the cap", 90 * time.Minute, 0, 90 * time.Minute, 90 * time.Minute},
		{"capability clamped to max_timeout", 5 * time.Hour, 0, 2 * time.Hour, 5 * time.Hour},
		{"host cap below the event's", 0, 30 * time.Minute, 30 * time.Minute, 30 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clock := newManualClock()
			tl := repoTool(t, tool.WithClock(clock), tool.WithLimits(tool.Limits{MaxEventTimeout: tt.hostMax}))
			task := newTask(t, tl, tool.TaskConfig{Capability: tool.Capability{EventTimeout: tt.cap,
				Bindings: map[string]any{"repo": "o/r"}}})
			mustInvoke(t, task, "watch_label", map[string]any{"label": "bug"})
			labeled := `{"label":{"name":"bug"},"repository":{"full_name":"o/r"},"sender":{"login":"carol"}}`

			clock.Advance(tt.want) // exactly the timeout: not yet expired
			wantOutcome(t, deliver(t, task, signed(hookSecret, "", labeled)), "labeled:activated", "pushed:filter_false")
			clock.Advance(tt.want) // the activation was activity; idle for exactly the timeout again
			clock.Advance(time.Second)
			expiredPush := "pushed:filter_false"
			if tt.pushed > 0 && tt.pushed < tt.want+time.Second {
				expiredPush = "pushed:expired"
			}
			wantOutcome(t, deliver(t, task, signed(hookSecret, "", labeled)), "labeled:expired", expiredPush)
			// The task is untouched: calls work, and activity does not revive the expired event.
			mustInvoke(t, task, "watch_label", map[string]any{"label": "bug"})
			wantOutcome(t, deliver(t, task, signed(hookSecret, "", labeled)), "labeled:expired", expiredPush)
			// The capability's timeout and the host's cap apply to every event; `pushed` has none of its own.
			pushed := "pushed:activated"
			if tt.pushed > 0 && tt.pushed < tt.want+time.Second {
				pushed = "pushed:expired"
			}
			wantOutcome(t, deliver(t, task, signed(hookSecret, "", pushBody)), "labeled:expired", pushed)
			if err := task.Resume(context.Background()); err != nil {
				t.Fatal(err)
			}
			wantOutcome(t, deliver(t, task, signed(hookSecret, "", labeled)), "labeled:activated", "pushed:filter_false")
		})
	}
}

func TestTouchKeepsEventsAlive(t *testing.T) {
	t.Parallel()
	clock := newManualClock()
	task := newTask(t, repoTool(t, tool.WithClock(clock)), tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}})
	mustInvoke(t, task, "watch_label", map[string]any{"label": "bug"})
	labeled := `{"label":{"name":"bug"},"repository":{"full_name":"o/r"},"sender":{"login":"carol"}}`
	for range 3 {
		clock.Advance(50 * time.Minute)
		task.Touch()
	}
	wantOutcome(t, deliver(t, task, signed(hookSecret, "", labeled)), "labeled:activated", "pushed:filter_false")
	clock.Advance(61 * time.Minute)
	task.Touch() // too late: the event expired before this activity
	wantOutcome(t, deliver(t, task, signed(hookSecret, "", labeled)), "labeled:expired", "pushed:filter_false")
}

func TestInterruptResume(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 2)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-time.After(300 * time.Millisecond):
			fmt.Fprint(w, `"done"`)
		}
	}))
	t.Cleanup(slow.Close)
	extra := `  - name: follower
    description: A follower event without a filter.
    message: "follow"
    receive:
      webhook: {}
`
	src := strings.Replace(repoEvents(extra), "actions:\n", "actions:\n"+
		"  - name: slow_cancel\n    description: Slow, cancelled by an interrupt.\n    annotations: {interrupt_behavior: cancel}\n"+
		"    execute:\n      stateless_http:\n        method: GET\n        url: \""+slow.URL+"/c\"\n"+
		"  - name: slow_block\n    description: Slow, finishes despite an interrupt.\n"+
		"    execute:\n      stateless_http:\n        method: GET\n        url: \""+slow.URL+"/b\"\n", 1)
	tl := mustLoadSrc(t, src, tool.WithSettings(map[string]any{"secret": hookSecret}))
	task := newTask(t, tl, tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}})

	type outcome struct {
		res *tool.Result
		err error
	}
	results := map[string]chan outcome{"slow_cancel": make(chan outcome, 1), "slow_block": make(chan outcome, 1)}
	for action, ch := range results {
		go func() {
			res, err := task.Invoke(context.Background(), action, nil)
			ch <- outcome{res, err}
		}()
	}
	<-started
	<-started
	if err := task.Interrupt(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := <-results["slow_cancel"]; !errors.Is(got.err, tool.ErrInterrupted) {
		t.Errorf("slow_cancel: err = %v, want ErrInterrupted", got.err)
	}
	if got := <-results["slow_block"]; got.err != nil || got.res.IsError || got.res.Output != "done" {
		t.Errorf("slow_block = %+v, %v; want it to finish", got.res, got.err)
	}
	in := &tool.Inbound{Event: "follower", Body: []byte(`{}`)}
	wantOutcome(t, deliver(t, task, in), "follower:interrupted")
	if err := task.Resume(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantOutcome(t, deliver(t, task, in), "follower:activated")
}

// A retry of a delivery still in the Sink is in flight (the Router answers 503: retry later), neither a second
// activation nor a duplicate, which would be answered 2xx before any Sink accepted.
func TestConcurrentRetryIsInFlight(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}), make(chan struct{})
	sink := tool.SinkFunc(func(context.Context, tool.Activation) error {
		entered <- struct{}{}
		<-release
		return nil
	})
	task := newTask(t, repoTool(t), tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}, Sink: sink})
	first := make(chan *tool.Delivery)
	go func() { first <- deliver(t, task, signed(hookSecret, "d-1", pushBody)) }()
	<-entered
	retry := deliver(t, task, signed(hookSecret, "d-1", pushBody))
	close(release)
	wantOutcome(t, <-first, "pushed:activated", "labeled:empty_allow_list")
	wantOutcome(t, retry, "pushed:in_flight", "labeled:empty_allow_list")
	wantOutcome(t, deliver(t, task, signed(hookSecret, "d-1", pushBody)), "pushed:duplicate", "labeled:empty_allow_list")
}

// A Standard Webhooks replay cannot dodge dedupe with an unsigned X-GitHub-Delivery header.
func TestStandardWebhooksReplayCannotDodgeDedupe(t *testing.T) {
	t.Parallel()
	clock := newManualClock()
	task := newTask(t, repoTool(t, tool.WithClock(clock)), tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}})
	h := webhook.SignStandard([]byte(hookSecret), "msg_1", clock.Now(), []byte(pushBody))
	wantOutcome(t, deliver(t, task, &tool.Inbound{Headers: h, Body: []byte(pushBody)}), "pushed:activated", "labeled:empty_allow_list")
	h.Set("X-GitHub-Delivery", "fresh-id")
	wantOutcome(t, deliver(t, task, &tool.Inbound{Headers: h, Body: []byte(pushBody)}), "pushed:duplicate", "labeled:empty_allow_list")
}

// Secret parameters never reach an Activation.
func TestSecretParametersNeverReachAnActivation(t *testing.T) {
	t.Parallel()
	src := manifestHeader("secret-param") + `parameters:
  properties:
    token: {type: string, format: password, require_binding: true}
events:
  - name: ping
    description: A ping.
    message: "ping with {parameters.token}"
    receive:
      webhook: {}
`
	task := newTask(t, mustLoadSrc(t, src), tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"token": "tok-123456"}}})
	d := deliver(t, task, &tool.Inbound{Body: []byte(`{}`)})
	wantOutcome(t, d, "ping:activated")
	a := d.Activations[0]
	if _, ok := a.Parameters["token"]; ok || strings.Contains(a.Message, "tok-123456") {
		t.Errorf("activation carries the secret: %+v", a)
	}
}

// TestPayloadsDecodeAsEncodingJSONDoes: a payload is decoded as encoding/json decodes it, whatever its sender
// escapes. Python's json.dumps, for one, writes an emoji as a \uD83D\uDE00 surrogate pair; the message and the
// filter see the character itself.
func TestPayloadsDecodeAsEncodingJSONDoes(t *testing.T) {
	t.Parallel()
	src := manifestHeader("unsigned") + `events:
  - name: note
    description: A note.
    message: "{event.payload.title} #{event.payload.n}"
    receive:
      webhook:
        filter: event.payload.title.startsWith("😀") && event.payload.n == 7 && event.payload.ratio > 0.5
`
	task := newTask(t, mustLoadSrc(t, src), tool.TaskConfig{})
	body := `{"title": "\ud83d\ude00 caf\u00e9", "n": 7, "ratio": 0.75}`
	d := deliver(t, task, &tool.Inbound{Body: []byte(body)})
	wantOutcome(t, d, "note:activated")
	if got, want := d.Activations[0].Message, "😀 café #7"; got != want {
		t.Errorf("message = %q, want %q", got, want)
	}
}

// payloadTool has two webhook events signed with hookSecret: `any` takes every payload, `built` only those
// whose build is over 3. Its task is what TestPayload* deliver to.
func payloadTool(t *testing.T) *tool.Task {
	t.Helper()
	src := manifestHeader("payloads") + `settings:
  properties:
    secret: {type: string, format: password}
events:
  - name: any
    description: Any payload.
    message: "build {event.payload.build}"
    receive:
      webhook:
        secret: "{settings.secret}"
  - name: built
    description: A build over 3.
    message: "built {event.payload.build}"
    receive:
      webhook:
        secret: "{settings.secret}"
        filter: event.payload.build > 3.0
`
	return newTask(t, mustLoadSrc(t, src, tool.WithSettings(map[string]any{"secret": hookSecret})), tool.TaskConfig{})
}

// encodes fails the test unless a encodes with encoding/json, and returns its payload's JSON.
func encodes(t *testing.T, a tool.Activation) string {
	t.Helper()
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatalf("json.Marshal(activation of %q) = %v", a.Event, err)
	}
	var back struct{ Payload json.RawMessage }
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	return string(back.Payload)
}

// A number beyond float64's range is kept as it was written (a json.Number), never ±Inf: the Activation holds
// and encodes the sender's number, a message renders its text, and a filter that reads it is a filter_error
// saying why. A number too small for float64 is 0, as float64 rounds it.
func TestPayloadNumbersBeyondFloat64AreKeptAsWritten(t *testing.T) {
	t.Parallel()
	task := payloadTool(t)
	for body, want := range map[string]any{
		`{"build":1e400}`:   json.Number("1e400"),
		`{"build":-1E+400}`: json.Number("-1E+400"),
		`{"build":123456789012345678901234567890e300}`: json.Number("123456789012345678901234567890e300"),
		`{"build":1e-400}`:                         float64(0),
		`{"build":123456789012345678901234567890}`: json.Number("123456789012345678901234567890"),
	} {
		t.Run(body, func(t *testing.T) { payloadNumberKept(t, task, body, want) })
	}
}

// payloadNumberKept delivers body, whose build is beyond float64 or int64, and checks that want is kept.
func payloadNumberKept(t *testing.T, task *tool.Task, body string, want any) {
	d := deliver(t, task, signed(hookSecret, "", body))
	if len(d.Activations) == 0 || d.Activations[0].Event != "any" {
		t.Fatalf("%v (%+v)", outcome(d), d.Discarded)
	}
	a := d.Activations[0]
	if got := a.Payload.(map[string]any)["build"]; got != want {
		t.Errorf("payload build = %#v, want %#v", got, want)
	}
	n, exact := want.(json.Number)
	if got := encodes(t, a); exact && got != body {
		t.Errorf("the activation's payload encodes as %s", got)
	}
	if !exact {
		return
	}
	if a.Message != "build "+string(n) {
		t.Errorf("message %q", a.Message)
	}
	if _, err := n.Float64(); err != nil { // beyond float64: a filter cannot compare it
		wantOutcome(t, d, "any:activated", "built:filter_error")
		if detail := d.Discarded[0].Detail; !strings.Contains(detail, "beyond float64") {
			t.Errorf("filter_error detail %q does not say why", detail)
		}
	}
}

// A body is a JSON payload only when it is valid JSON (RFC 8259, as encoding/json reads it): anything else,
// a byte order mark first included, is the body as text. Such a text is never parsed, so a BOM cannot take a
// body past InboundDepth either.
func TestPayloadIsJSONOnlyWhenValid(t *testing.T) {
	t.Parallel()
	task := payloadTool(t)
	bom := "\xef\xbb\xbf"
	for _, body := range []string{
		`{"build":1.}`, `{"build":2.e3}`, `{"build":-2.}`, bom + `{"build":7}`, bom + `{}`, bom,
		bom + string(nested(200)), `{"build":7}x`, `{"build":7} {}`, ` `, `{"build":01}`, `[1,]`,
	} {
		t.Run(fmt.Sprintf("%.40q", body), func(t *testing.T) {
			d := deliver(t, task, signed(hookSecret, "", body))
			wantOutcome(t, d, "any:activated", "built:filter_false")
			if got := d.Activations[0].Payload; got != body {
				t.Errorf("payload = %#v, want the body as text", got)
			}
			encodes(t, d.Activations[0])
		})
	}
	// The same documents without the defect are JSON.
	for body, want := range map[string]any{`{"build":1.0}`: float64(1), `{"build":2e3}`: float64(2000), `{"build":7}`: int64(7)} {
		d := deliver(t, task, signed(hookSecret, "", body))
		if got := d.Activations[0].Payload.(map[string]any)["build"]; got != want {
			t.Errorf("%s: build = %#v, want %#v", body, got, want)
		}
	}
}
