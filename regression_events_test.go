package tool_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/events/webhook"
)

// Regressions found by review of the events work.

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
func TestRegressionStandardWebhooksReplay(t *testing.T) {
	t.Parallel()
	clock := newManualClock()
	task := newTask(t, repoTool(t, tool.WithClock(clock)), tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}})
	h := webhook.SignStandard([]byte(hookSecret), "msg_1", clock.Now(), []byte(pushBody))
	wantOutcome(t, deliver(t, task, &tool.Inbound{Headers: h, Body: []byte(pushBody)}), "pushed:activated", "labeled:empty_allow_list")
	h.Set("X-GitHub-Delivery", "fresh-id")
	wantOutcome(t, deliver(t, task, &tool.Inbound{Headers: h, Body: []byte(pushBody)}), "pushed:duplicate", "labeled:empty_allow_list")
}

// Secret parameters never reach an Activation.
func TestRegressionSecretParameterNotInActivation(t *testing.T) {
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

// A root prefix works, and a missing secret setting answers 500 rather than dropping payloads with 202.
func TestRegressionRouterRootPrefixAndMisconfigured(t *testing.T) {
	t.Parallel()
	tl := mustLoadSrc(t, repoEvents("")) // no settings: the secret renders empty
	r := tool.NewRouter(tool.WithPrefix("/"))
	mux := http.NewServeMux()
	r.Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	task := newTask(t, tl, tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}})
	if err := r.Add(task); err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Post(srv.URL+"/tests/repo-events", "application/json", strings.NewReader(pushBody))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("status %d, want 500 for a misconfigured secret", resp.StatusCode)
	}
}
