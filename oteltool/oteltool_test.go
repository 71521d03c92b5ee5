package oteltool_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	tool "github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/oteltool"
	"github.com/commonagents-go/tool/runtime"
	"github.com/commonagents-go/tool/tooltest"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// manifest is examples/feed-poll's tool (a poll event) with an HTTP action and a webhook event added.
func manifest(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile("../examples/feed-poll/feed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := strings.Replace(string(src), "        interval: 300ms\n", "", 1)
	m = strings.Replace(m, "actions:\n", `actions:
  - name: read_post
    description: Reads one post of the feed.
    parameters:
      properties:
        post_id: {type: string}
    execute:
      stateless_http:
        method: GET
        url: "{settings.api}/posts/{parameters.post_id}"
`, 1)
	return m + `  - name: mentioned
    description: The feed mentions the agent.
    message: "Mentioned in {event.payload.feed}"
    receive:
      webhook:
        filter: "event.payload.feed == parameters.feed_id"
`
}

type telemetry struct {
	spans  *tracetest.InMemoryExporter
	reader *sdkmetric.ManualReader
	tp     *sdktrace.TracerProvider
}

func newTelemetry(t *testing.T) telemetry {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	reader := sdkmetric.NewManualReader()
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return telemetry{spans: spans, reader: reader, tp: tp}
}

func (tm telemetry) metrics(t *testing.T) map[string]metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := tm.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

func attrs(kvs []attribute.KeyValue) map[string]string {
	out := map[string]string{}
	for _, kv := range kvs {
		out[string(kv.Key)] = kv.Value.Emit()
	}
	return out
}

func TestCallSpansAndMetrics(t *testing.T) {
	tooltest.NoLeaks(t)
	tm := newTelemetry(t)
	srv := tooltest.NewServer(t)
	srv.Handle("GET", "/feeds/tech/items", tooltest.Response{Body: map[string]any{"items": []any{}}})
	srv.Handle("GET", "/posts/post-secret-42", tooltest.Response{Body: map[string]any{"title": "hi"}})
	client := &http.Client{Transport: otelhttp.NewTransport(http.DefaultTransport, otelhttp.WithTracerProvider(tm.tp))}
	clock := tooltest.NewClock(time.Time{})
	tl := tooltest.Load(t, manifest(t), tool.WithClock(clock), tool.WithHTTPClient(client),
		tool.WithSettings(map[string]any{"api": srv.URL}),
		tool.WithObserver(oteltool.NewObserver(oteltool.WithTracerProvider(tm.tp),
			oteltool.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(tm.reader))))))
	sink := tooltest.NewSink()
	task := tooltest.NewTask(t, tl, tool.TaskConfig{Sink: sink, Capability: tool.Capability{Key: "news",
		Bindings: map[string]any{"feed_id": "tech"}}})
	clock.BlockUntil(t, 1) // the first poll ran

	ctx, parent := tm.tp.Tracer("host").Start(context.Background(), "agent turn")
	res, err := task.InvokeFunction(tool.ContextWithCallID(ctx, "call_abc"), "news_read_post", []byte(`{"post_id":"post-secret-42"}`))
	if err != nil || res.IsError {
		t.Fatalf("read_post: %v %+v", err, res)
	}
	res, _ = task.InvokeFunction(ctx, "news_read_post", []byte(`{}`))
	if res.Error.Kind != runtime.KindMissingFields {
		t.Fatalf("read_post without post_id = %+v", res.Error)
	}
	if res, _ = task.InvokeFunction(ctx, "news_translate", nil); res.Error.Kind != runtime.KindUnknownFunction {
		t.Fatalf("unknown function = %+v", res.Error)
	}
	in := &tool.Inbound{Body: []byte(`{"feed":"tech","note":"payload-secret-7"}`)}
	if d, err := task.Deliver(ctx, in); err != nil || len(d.Activations) != 1 {
		t.Fatalf("Deliver = %+v, %v", d, err)
	}
	if d, err := task.Deliver(ctx, &tool.Inbound{Body: []byte(`{"feed":"sports"}`)}); err != nil || len(d.Discarded) == 0 {
		t.Fatalf("Deliver = %+v, %v", d, err)
	}
	parent.End()

	spans := map[string][]tracetest.SpanStub{}
	for _, s := range tm.spans.GetSpans() {
		spans[s.Name] = append(spans[s.Name], s)
		if s.InstrumentationScope.Name != oteltool.ScopeName {
			continue // otelhttp's client span has the URL, as it should
		}
		for _, kv := range append(s.Attributes, eventAttrs(s)...) {
			if v := kv.Value.Emit(); strings.Contains(v, "secret") {
				t.Errorf("span %s: attribute %s = %q holds an argument or payload value", s.Name, kv.Key, v)
			}
		}
	}
	calls := spans["execute_tool news_read_post"]
	if len(calls) != 2 {
		t.Fatalf("execute_tool spans = %d, want 2 (spans: %v)", len(calls), keys(spans))
	}
	ok, failed := calls[0], calls[1]
	want := map[string]string{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "news_read_post",
		"gen_ai.tool.call.id": "call_abc", "gen_ai.tool.description": "Reads one post of the feed.",
		"gen_ai.tool.type": "function", "tool.action": "read_post", "tool.name": "feed"}
	got := attrs(ok.Attributes)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("span attribute %s = %q, want %q", k, got[k], v)
		}
	}
	if ok.Parent.SpanID() != parent.SpanContext().SpanID() || ok.SpanKind != trace.SpanKindInternal || ok.Status.Code == codes.Error {
		t.Errorf("execute_tool span: parent %v kind %v status %v", ok.Parent.SpanID(), ok.SpanKind, ok.Status)
	}
	var httpSpans int
	for _, s := range tm.spans.GetSpans() {
		if s.SpanKind == trace.SpanKindClient && s.Parent.SpanID() == ok.SpanContext.SpanID() {
			httpSpans++
		}
	}
	if httpSpans != 1 {
		t.Errorf("HTTP client spans under the execute_tool span = %d, want 1", httpSpans)
	}
	if failed.Status.Code != codes.Error || attrs(failed.Attributes)["error.type"] != "missing_fields" {
		t.Errorf("failed call: status %v, error.type %q", failed.Status, attrs(failed.Attributes)["error.type"])
	}
	unknown := spans["execute_tool news_translate"]
	if len(unknown) != 1 || attrs(unknown[0].Attributes)["error.type"] != "unknown_function" {
		t.Errorf("unknown function spans = %+v", unknown)
	}

	// The delivery's activation is an event on the caller's span; the background poll is a span of its own.
	events := map[string]bool{}
	for _, s := range spans["agent turn"] {
		for _, e := range s.Events {
			events[e.Name] = true
		}
	}
	if !events["event.activated"] || !events["event.discarded"] {
		t.Errorf("events on the caller's span = %v, want event.activated and event.discarded", events)
	}
	if p := spans["poll.fetched"]; len(p) != 1 || attrs(p[0].Attributes)["tool.event"] != "new_post" {
		t.Errorf("poll.fetched spans = %+v", p)
	}

	m := tm.metrics(t)
	hist, ok2 := m[oteltool.CallDurationMetric].(metricdata.Histogram[float64])
	if !ok2 {
		t.Fatalf("no %s histogram in %v", oteltool.CallDurationMetric, keys(m))
	}
	var n uint64
	kinds := map[string]uint64{}
	for _, dp := range hist.DataPoints {
		n += dp.Count
		v, _ := dp.Attributes.Value("error.type")
		kinds[v.Emit()] += dp.Count
	}
	if n != 3 || kinds["missing_fields"] != 1 || kinds["unknown_function"] != 1 || kinds[""] != 1 {
		t.Errorf("call durations: %d points by error.type %v, want 3", n, kinds)
	}
	counter, _ := m[oteltool.ActivationsMetric].(metricdata.Sum[int64])
	if len(counter.DataPoints) != 1 || counter.DataPoints[0].Value != 1 {
		t.Errorf("activations = %+v, want 1", counter.DataPoints)
	}
}

func eventAttrs(s tracetest.SpanStub) []attribute.KeyValue {
	var out []attribute.KeyValue
	for _, e := range s.Events {
		out = append(out, e.Attributes...)
	}
	return out
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A denied approval and an unrecoverable failure each end their span with the right error.type; approval steps are
// events on the call's span.
func TestApprovalAndUnrecoverableSpans(t *testing.T) {
	tm := newTelemetry(t)
	tl := tooltest.Load(t, manifest(t), tool.WithSettings(map[string]any{"api": "http://127.0.0.1:1"}),
		tool.WithLimits(tool.Limits{MaxCalls: 2}),
		tool.WithObserver(oteltool.NewObserver(oteltool.WithTracerProvider(tm.tp))))
	task := tooltest.NewTask(t, tl, tool.TaskConfig{Capability: tool.Capability{Include: []string{"feed_link", "read_post"},
		Bindings: map[string]any{"feed_id": "tech"}, Approve: []string{"read_post"}},
		Approver: tool.ApproverFunc(func(context.Context, tool.ApprovalRequest) (tool.Approval, error) {
			return tool.Approval{Approved: false, Reason: "no", By: "carol"}, nil
		})})
	if res, _ := task.Invoke(context.Background(), "read_post", map[string]any{"post_id": "x"}); res.Error.Kind != runtime.KindDenied {
		t.Fatalf("read_post = %+v", res)
	}
	for range 2 {
		_, _ = task.Invoke(context.Background(), "feed_link", nil)
	}
	if _, err := task.Invoke(context.Background(), "feed_link", nil); err == nil {
		t.Fatal("a third call ran past MaxCalls")
	}
	var types []string
	for _, s := range tm.spans.GetSpans() {
		types = append(types, s.Name+":"+attrs(s.Attributes)["error.type"])
		if s.Name == "execute_tool feed_read_post" {
			var names []string
			for _, e := range s.Events {
				names = append(names, e.Name)
				if e.Name == "tool.approval.decided" && attrs(e.Attributes)["tool.approval.by"] != "carol" {
					t.Errorf("decided event attributes = %v", e.Attributes)
				}
			}
			if fmt.Sprint(names) != "[tool.approval.requested tool.approval.decided]" {
				t.Errorf("approval span events = %v", names)
			}
		}
	}
	want := "[execute_tool feed_read_post:denied execute_tool feed_feed_link: execute_tool feed_feed_link: execute_tool feed_feed_link:unrecoverable]"
	if fmt.Sprint(types) != want {
		t.Errorf("spans = %v\nwant %v", types, want)
	}
}

// The root package never imports oteltool, nor OpenTelemetry at all: hosts that do not trace do not link it.
func TestRootDoesNotImportOpenTelemetry(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/commonagents-go/tool").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "go.opentelemetry.io/") || dep == "github.com/commonagents-go/tool/oteltool" {
			t.Errorf("the root package depends on %s", dep)
		}
	}
}
