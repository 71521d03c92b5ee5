// Package oteltool reports a task's calls, deliveries and background work to OpenTelemetry, following the GenAI
// semantic conventions for tool execution.
//
//	obs := oteltool.NewObserver() // the global TracerProvider and MeterProvider; see the With options
//	t, err := tool.Load(ctx, manifest, tool.WithObserver(obs),
//		tool.WithHTTPClient(&http.Client{Transport: otelhttp.NewTransport(http.DefaultTransport)}))
//
// Traces:
//   - Each call (Invoke, InvokeFunction, Start) is a span named "execute_tool {function}" (kind internal), a
//     child of the span in the context given to the call, with gen_ai.operation.name = "execute_tool",
//     gen_ai.tool.name (the function name), gen_ai.tool.call.id, gen_ai.tool.description, gen_ai.tool.type =
//     "function" and tool.action (the manifest action). A failed call has status Error and error.type = the
//     ToolError kind (invalid_arguments, timeout, unavailable, denied, unknown_function, …), "unrecoverable" for a
//     call that ended the task, or "cancelled". The span is in the context the backend runs with, so an
//     otelhttp-instrumented HTTP client makes the call's request a child of it. Approvals and the start of the
//     backend are span events on it: tool.approval.requested, tool.approval.decided (tool.approval.approved,
//     tool.approval.by), tool.started.
//   - Deliveries (Task.Deliver, Router.Dispatch, Router.ServeHTTP): each activation, discard and refusal is a
//     span event (event.activated, event.discarded, event.refused, with tool.event and tool.event.reason) on the
//     span of the context the delivery runs with — the HTTP server span when the Router is behind otelhttp.
//   - Background receivers (polls and subscriptions run by the task, with no caller's span): each of their
//     facts (poll.fetched, poll.failed, subscription.created, subscription.renewed, …) is a span of its own
//     named after the fact, with tool.name, tool.event and its counts; a failure has status Error. With a
//     caller's span in the context (Task.Resume, Close) they are span events on it instead.
//
// Metrics:
//   - tool.call.duration (histogram, seconds): every call, with gen_ai.operation.name, gen_ai.tool.name,
//     tool.name and, for a failed call, error.type.
//   - tool.event.activations (counter, {activation}): every activation handed to a task, with tool.name and
//     tool.event.
//
// Attributes never hold argument values, outputs, payloads, error messages or secrets: names, kinds, counts and
// identifiers only.
package oteltool

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	tool "github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/facts"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the tracer and meter.
const ScopeName = "github.com/commonagents-go/tool/oteltool"

// Names of the metrics.
const (
	CallDurationMetric = "tool.call.duration"
	ActivationsMetric  = "tool.event.activations"
)

// Attribute keys of this package (the GenAI ones come from the semantic conventions).
const (
	ToolNameKey   = attribute.Key("tool.name")
	ActionKey     = attribute.Key("tool.action")
	EventKey      = attribute.Key("tool.event")
	ReasonKey     = attribute.Key("tool.event.reason")
	ApprovedKey   = attribute.Key("tool.approval.approved")
	ApprovedByKey = attribute.Key("tool.approval.by")
)

// Option configures NewObserver.
type Option func(*config)

type config struct {
	tp trace.TracerProvider
	mp metric.MeterProvider
}

// WithTracerProvider sets the TracerProvider; the default is otel.GetTracerProvider() at NewObserver.
func WithTracerProvider(tp trace.TracerProvider) Option { return func(c *config) { c.tp = tp } }

// WithMeterProvider sets the MeterProvider; the default is otel.GetMeterProvider() at NewObserver.
func WithMeterProvider(mp metric.MeterProvider) Option { return func(c *config) { c.mp = mp } }

// Observer is a tool.Observer and tool.CallObserver that reports to OpenTelemetry. It is safe for concurrent use.
type Observer struct {
	tracer      trace.Tracer
	duration    metric.Float64Histogram
	activations metric.Int64Counter
}

// NewObserver returns an Observer (as a tool.Observer, to pass to tool.WithObserver). To report facts to another
// observer too, wrap both in a type of your own whose Observe calls each and whose StartCall calls this one's
// (a tool.ObserverFunc has no StartCall, so calls would have no spans).
func NewObserver(opts ...Option) tool.Observer {
	c := config{}
	for _, o := range opts {
		o(&c)
	}
	if c.tp == nil {
		c.tp = otel.GetTracerProvider()
	}
	if c.mp == nil {
		c.mp = otel.GetMeterProvider()
	}
	o := &Observer{tracer: c.tp.Tracer(ScopeName, trace.WithSchemaURL(semconv.SchemaURL))}
	meter := c.mp.Meter(ScopeName, metric.WithSchemaURL(semconv.SchemaURL))
	var err error
	o.duration, err = meter.Float64Histogram(CallDurationMetric, metric.WithUnit("s"),
		metric.WithDescription("Duration of tool calls (execute_tool)."))
	if err != nil {
		otel.Handle(err)
	}
	o.activations, err = meter.Int64Counter(ActivationsMetric, metric.WithUnit("{activation}"),
		metric.WithDescription("Activations handed to tasks by deliveries and background receivers."))
	if err != nil {
		otel.Handle(err)
	}
	return o
}

// callKey holds the *callSpan of the call a context belongs to.
type callKey struct{}

// callSpan is one call's span and what its end needs.
type callSpan struct {
	id    string
	span  trace.Span
	start time.Time
	attrs []attribute.KeyValue // for the duration metric
	once  sync.Once
}

// StartCall starts the call's execute_tool span and returns the context the call runs with.
func (o *Observer) StartCall(ctx context.Context, c tool.CallStart) context.Context {
	attrs := []attribute.KeyValue{semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(c.Function),
		ToolNameKey.String(c.Tool)}
	spanAttrs := append(attrs[:len(attrs):len(attrs)], semconv.GenAIToolCallID(c.CallID), semconv.GenAIToolType("function"))
	if c.Description != "" {
		spanAttrs = append(spanAttrs, semconv.GenAIToolDescription(c.Description))
	}
	if c.Action != "" {
		spanAttrs = append(spanAttrs, ActionKey.String(c.Action))
	}
	ctx, span := o.tracer.Start(ctx, "execute_tool "+c.Function, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(spanAttrs...))
	return context.WithValue(ctx, callKey{}, &callSpan{id: c.CallID, span: span, start: time.Now(), attrs: attrs})
}

// Observe turns a fact into span events, spans and metrics.
func (o *Observer) Observe(ctx context.Context, f tool.Fact) {
	if cs, ok := ctx.Value(callKey{}).(*callSpan); ok && f.CallID != "" && f.CallID == cs.id {
		o.callFact(ctx, cs, f)
		return
	}
	if f.Name == facts.EventActivated {
		o.activations.Add(ctx, 1, metric.WithAttributes(ToolNameKey.String(f.Tool), EventKey.String(str(f.Data["event"]))))
	}
	attrs := factAttributes(f)
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent(f.Name, trace.WithAttributes(attrs...))
		return
	}
	if strings.HasPrefix(f.Name, "poll.") || strings.HasPrefix(f.Name, "subscription.") ||
		strings.HasPrefix(f.Name, "event.") {
		_, span := o.tracer.Start(ctx, f.Name, trace.WithTimestamp(f.Time), trace.WithAttributes(attrs...))
		if strings.HasSuffix(f.Name, "failed") {
			span.SetStatus(codes.Error, f.Name)
		}
		span.End()
	}
}

// callFact records a fact of a call on its span; the fact that ends the call ends the span.
func (o *Observer) callFact(ctx context.Context, cs *callSpan, f tool.Fact) {
	var errorType string
	switch f.Name {
	case facts.ToolResult:
	case facts.ToolFailed:
		errorType = errorKind(f.Data)
	case facts.ToolCancelled:
		errorType = "cancelled"
	case facts.ApprovalDecided:
		approved, _ := f.Data["approved"].(bool)
		attrs := []attribute.KeyValue{ApprovedKey.Bool(approved)}
		if by := str(f.Data["by"]); by != "" {
			attrs = append(attrs, ApprovedByKey.String(by))
		}
		cs.span.AddEvent(f.Name, trace.WithAttributes(attrs...))
		return
	default: // tool.started, tool.approval.requested, tool.progress, allowlist.evicted: names only
		cs.span.AddEvent(f.Name)
		return
	}
	cs.once.Do(func() {
		attrs := cs.attrs
		if errorType != "" {
			attrs = append(attrs[:len(attrs):len(attrs)], semconv.ErrorTypeKey.String(errorType))
			cs.span.SetAttributes(semconv.ErrorTypeKey.String(errorType))
			cs.span.SetStatus(codes.Error, errorType)
		}
		cs.span.End()
		o.duration.Record(context.WithoutCancel(ctx), time.Since(cs.start).Seconds(), metric.WithAttributes(attrs...))
	})
}

// errorKind returns the error.type of a tool.failed fact: the ToolError's kind, or "unrecoverable".
func errorKind(data map[string]any) string {
	if te, ok := data["error"].(*tool.ToolError); ok && te.Kind != "" {
		return te.Kind
	}
	return "unrecoverable"
}

// factAttributes are the safe attributes of a fact outside calls: its tool, and the names and counts its data
// holds (never values from payloads, arguments or errors).
func factAttributes(f tool.Fact) []attribute.KeyValue {
	attrs := []attribute.KeyValue{ToolNameKey.String(f.Tool)}
	if ev := str(f.Data["event"]); ev != "" {
		attrs = append(attrs, EventKey.String(ev))
	}
	if r := str(f.Data["reason"]); r != "" && f.Name != facts.ToolCancelled {
		attrs = append(attrs, ReasonKey.String(r))
	}
	for _, k := range []string{"items", "fired", "discarded", "refused", "attempt"} {
		if n, ok := f.Data[k].(int); ok { // poll.fetched's counts, a failure's attempt number
			attrs = append(attrs, attribute.Int("tool."+k, n))
		}
	}
	return attrs
}

func str(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

var (
	_ tool.Observer     = (*Observer)(nil)
	_ tool.CallObserver = (*Observer)(nil)
)
