package tool_test

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/celenv"
	"github.com/commonagents-go/tool/events"
	"github.com/commonagents-go/tool/field"
	"github.com/commonagents-go/tool/runtime"
)

// queueReceiver is a third-party receive backend: `receive: {queue: {topic: "...", filter: "..."}}`.
type queueReceiver struct{}

type queueConfig struct {
	events.Common
	Topic string `json:"topic"`
}

type queueEvent struct{ compiled *events.Compiled }

func (e *queueEvent) Common() *events.Compiled { return e.compiled }

func (queueReceiver) Kind() string { return "queue" }

func (queueReceiver) Prepare(_ context.Context, b *events.Block) (events.Event, error) {
	var cfg queueConfig
	errs := b.Decode(&cfg)
	c, e := b.Compile(cfg.Common, celenv.ScopeExtract)
	errs = append(errs, e...)
	if cfg.Topic == "" {
		errs.Add(field.Required(b.Path.Child("topic"), "topic is required"))
	} else {
		_, e := b.Check.Template(b.Path.Child("topic"), cfg.Topic, "parameters", "settings")
		errs = append(errs, e...)
	}
	return &queueEvent{compiled: c}, errs.Err()
}

var (
	_ events.Receiver = queueReceiver{}
	_ events.Event    = (*queueEvent)(nil)
)

// withEcho returns a clone of the default runtime registry with the echo backend added.
func withEcho(t *testing.T) *runtime.Registry {
	t.Helper()
	r := runtime.Default().Clone()
	if err := r.Register(echoBackend{}); err != nil {
		t.Fatalf("Register(echo): %v", err)
	}
	return r
}

// withQueue returns a clone of the default events registry with the queue receiver added.
func withQueue(t *testing.T) *events.Registry {
	t.Helper()
	r := events.Default().Clone()
	if err := r.Register(queueReceiver{}); err != nil {
		t.Fatalf("Register(queue): %v", err)
	}
	return r
}

// echoManifest uses the echo backend with the given block body (indented under echo:).
func echoManifest(block string) string {
	return manifestHeader("greeter") + `parameters:
  properties:
    name: { type: string }
actions:
  - name: greet
    description: Says hello.
    execute:
      echo:
` + block
}

func TestUnregisteredBackendListsKinds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		manifest string
		opts     []tool.Option
		path     string
		kinds    []string
	}{
		{"unknown action backend", manifestHeader("x") + `actions:
  - name: send
    description: Sends mail.
    execute:
      smtp: { to: "a@example.com" }
`, nil, "actions[0].execute.smtp", runtime.Default().Kinds()},
		{"custom backend without its registry", echoManifest("        message: hi\n"), nil,
			"actions[0].execute.echo", runtime.Default().Kinds()},
		{"unknown backend with a custom registry", manifestHeader("x") + `actions:
  - name: send
    description: Sends mail.
    execute:
      smtp: {}
`, []tool.Option{tool.WithRuntimes(withEcho(t))}, "actions[0].execute.smtp",
			append(runtime.Default().Kinds(), "echo")},
		{"unknown receive type", manifestHeader("x") + "actions:\n" + celAction("a", "") + `events:
  - name: mail
    message: "got mail"
    receive:
      imap: {}
`, nil, "events[0].receive.imap", events.Default().Kinds()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if len(tt.kinds) < 3 {
				t.Fatalf("the registry lists too few kinds: %v", tt.kinds)
			}
			verr := mustFailSrc(t, tt.manifest, tt.opts...)
			assertProblem(t, verr, tt.path, "unsupported")
			p := problemAt(t, verr, tt.path)
			for _, k := range tt.kinds {
				if !strings.Contains(p.Detail, k) {
					t.Errorf("detail does not name the registered kind %q: %s", k, p.Detail)
				}
			}
		})
	}
}

func TestUnregisteredKubernetesJobNamesImport(t *testing.T) {
	t.Parallel()
	src := manifestHeader("k8s") + `actions:
  - name: run
    description: Runs a job.
    execute:
      kubernetes_job: {}
`
	verr := mustFailSrc(t, src)
	p := problemAt(t, verr, "actions[0].execute.kubernetes_job")
	if p.Type != "unsupported" || !strings.Contains(p.Detail, "github.com/commonagents-go/tool/runtime/kubernetesjob") {
		t.Errorf("problem = %+v, want unsupported naming the package to import", p)
	}
}

func TestCustomRuntime(t *testing.T) {
	t.Parallel()
	runtimes := withEcho(t)
	tl := mustLoadSrc(t, echoManifest("        message: \"hi {parameters.name}\"\n"), tool.WithRuntimes(runtimes))
	fns := tl.Functions(tool.Capability{})
	if len(fns) != 1 || fns[0].Name != "greeter" || fns[0].Action != "greet" {
		t.Fatalf("functions = %+v", fns)
	}
	assertLLMSchema(t, fns[0])
	if got := decodeLLMSchema(t, fns[0].Parameters).propertyNames(); !reflect.DeepEqual(got, []string{"name"}) {
		t.Errorf("properties = %v, want [name]", got)
	}
	cat := tl.Catalog(tool.Capability{})
	if len(cat) != 1 || !cat[0].IsReadOnly || cat[0].IsDestructive || cat[0].RuntimeOwner != "local" {
		t.Errorf("catalog does not use the backend's traits: %+v", cat)
	}
	if _, ok := runtime.Default().Lookup("echo"); ok {
		t.Error("the default registry knows echo after a clone was given it")
	}
	if _, ok := runtimes.Lookup("echo"); !ok {
		t.Error("the clone lost echo")
	}
	if _, ok := runtimes.Lookup("cel"); !ok {
		t.Error("the clone lost the built-in cel backend")
	}
}

func TestCustomRuntimeProblems(t *testing.T) {
	t.Parallel()
	runtimes := withEcho(t)
	tests := []struct {
		name, block, path, typ string
	}{
		{"unknown key", "        message: hi\n        volume: 11\n", "actions[0].execute.echo.volume", "unsupported"},
		{"undeclared parameter", "        message: \"hi {parameters.nme}\"\n", "actions[0].execute.echo.message", "invalid"},
		{"root not allowed here", "        message: \"hi {session.id}\"\n", "actions[0].execute.echo.message", "forbidden"},
		{"template syntax", "        message: \"hi {parameters.name\"\n", "actions[0].execute.echo.message", "invalid"},
		{"missing message", "        {}\n", "actions[0].execute.echo.message", "required"},
		{"wrong type", "        message: [a, b]\n", "actions[0].execute.echo.message", "invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			verr := mustFailSrc(t, echoManifest(tt.block), tool.WithRuntimes(runtimes))
			assertProblem(t, verr, tt.path, tt.typ)
			if p := problemAt(t, verr, tt.path); p.Line == 0 {
				t.Errorf("problem without a line: %+v", p)
			}
		})
	}
}

func TestRuntimeRegistry(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		reg     func() *runtime.Registry
		rt      runtime.Runtime
		wantErr bool
	}{
		{"new kind in a clone", func() *runtime.Registry { return runtime.Default().Clone() }, echoBackend{}, false},
		{"new kind in an empty registry", runtime.NewRegistry, echoBackend{}, false},
		{"duplicate kind", func() *runtime.Registry {
			r := runtime.NewRegistry()
			_ = r.Register(echoBackend{})
			return r
		}, echoBackend{}, true},
		{"built-in kind again", func() *runtime.Registry { return runtime.Default().Clone() }, namedRuntime("cel"), true},
		{"nil", runtime.NewRegistry, nil, true},
		{"empty kind", runtime.NewRegistry, namedRuntime(""), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := tt.reg()
			before := r.Kinds()
			err := r.Register(tt.rt)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Register: err = %v, want error %t", err, tt.wantErr)
			}
			if tt.wantErr && !reflect.DeepEqual(r.Kinds(), before) {
				t.Errorf("a failed Register changed the kinds: %v -> %v", before, r.Kinds())
			}
			if !tt.wantErr {
				if got, ok := r.Lookup(tt.rt.Kind()); !ok || got != tt.rt {
					t.Errorf("Lookup(%q) = %v, %t", tt.rt.Kind(), got, ok)
				}
			}
		})
	}
}

func TestRuntimeRegistryCloneIsIndependent(t *testing.T) {
	t.Parallel()
	original := runtime.NewRegistry()
	if err := original.Register(namedRuntime("one")); err != nil {
		t.Fatal(err)
	}
	clone := original.Clone()
	if err := clone.Register(namedRuntime("two")); err != nil {
		t.Fatal(err)
	}
	if err := original.Register(namedRuntime("three")); err != nil {
		t.Fatal(err)
	}
	if got := original.Kinds(); !reflect.DeepEqual(got, []string{"one", "three"}) {
		t.Errorf("original kinds = %v", got)
	}
	if got := clone.Kinds(); !reflect.DeepEqual(got, []string{"one", "two"}) {
		t.Errorf("clone kinds = %v", got)
	}
	for _, k := range runtime.Default().Kinds() {
		if k == "one" || k == "two" || k == "three" || k == "echo" {
			t.Errorf("the default registry gained %q", k)
		}
	}
}

// namedRuntime is a runtime that only has a kind.
type namedRuntime string

func (n namedRuntime) Kind() string { return string(n) }
func (namedRuntime) Prepare(context.Context, *runtime.Block) (runtime.Action, error) {
	return nil, nil
}
func (namedRuntime) Initialize(context.Context, *runtime.Init) (runtime.Instance, error) {
	return nil, runtime.ErrNotImplemented
}

// queueManifest has one event using the queue receiver with the given block body (indented under queue:).
func queueManifest(block string) string {
	return manifestHeader("inbox") + `parameters:
  properties:
    topic_name: { type: string, require_binding: true }
actions:
` + celAction("noop", "") + `events:
  - name: message
    description: A message arrived.
    message: "new message: {event.subject}"
    receive:
      queue:
` + block
}

func TestCustomReceiver(t *testing.T) {
	t.Parallel()
	receivers := withQueue(t)
	ok := "        topic: \"inbox-{parameters.topic_name}\"\n        filter: \"event.payload.to == parameters.topic_name\"\n" +
		"        parameters:\n          subject: \"event.payload.subject\"\n"
	tl := mustLoadSrc(t, queueManifest(ok), tool.WithReceivers(receivers))
	if n := len(tl.Manifest().Events); n != 1 {
		t.Errorf("want 1 event, got %d", n)
	}
	if _, found := events.Default().Lookup("queue"); found {
		t.Error("the default events registry knows queue after a clone was given it")
	}
	if _, found := receivers.Lookup("webhook"); !found {
		t.Error("the clone lost the built-in webhook receiver")
	}

	_, err := tool.Load(context.Background(), []byte(queueManifest(ok)))
	assertProblem(t, err, "events[0].receive.queue", "unsupported")

	tests := []struct {
		name, block, path, typ string
	}{
		{"unknown key", "        topic: t\n        partition: 3\n", "events[0].receive.queue.partition", "unsupported"},
		{"missing topic", "        filter: \"true\"\n", "events[0].receive.queue.topic", "required"},
		{"undeclared parameter in template", "        topic: \"{parameters.nope}\"\n", "events[0].receive.queue.topic", "invalid"},
		{"filter does not compile", "        topic: t\n        filter: \"event.payload.to ==\"\n",
			"events[0].receive.queue.filter", "invalid"},
		{"filter names an undeclared parameter", "        topic: t\n        filter: \"parameters.nope == 'x'\"\n",
			"events[0].receive.queue.filter", "invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			verr := mustFailSrc(t, queueManifest(tt.block), tool.WithReceivers(receivers))
			assertProblem(t, verr, tt.path, tt.typ)
		})
	}
}

func TestEventsRegistry(t *testing.T) {
	t.Parallel()
	clone := events.Default().Clone()
	if err := clone.Register(queueReceiver{}); err != nil {
		t.Fatalf("Register(queue): %v", err)
	}
	if err := clone.Register(queueReceiver{}); err == nil {
		t.Error("a second Register(queue) succeeded")
	}
	webhook, _ := events.Default().Lookup("webhook")
	if webhook == nil {
		t.Fatal("the default events registry has no webhook receiver")
	}
	if err := clone.Register(webhook); err == nil {
		t.Error("registering webhook again succeeded")
	}
	if err := events.NewRegistry().Register(nil); err == nil {
		t.Error("Register(nil) succeeded")
	}
	want := append(events.Default().Kinds(), "queue")
	sort.Strings(want)
	if got := clone.Kinds(); !reflect.DeepEqual(got, want) {
		t.Errorf("clone kinds = %v, want %v", got, want)
	}
}

func TestNilRegistriesRefused(t *testing.T) {
	t.Parallel()
	src := []byte(manifestHeader("x") + "actions:\n" + celAction("a", ""))
	for _, opt := range []tool.Option{tool.WithRuntimes(nil), tool.WithReceivers(nil)} {
		_, err := tool.Load(context.Background(), src, opt)
		var verr *tool.ValidationError
		if err == nil || errors.As(err, &verr) {
			t.Errorf("want an option error, got %v", err)
		}
	}
}

// TestCustomRuntimeWithoutTraits checks SPEC §11: an action whose backend does not describe itself is treated as
// destructive, run locally.
func TestCustomRuntimeWithoutTraits(t *testing.T) {
	t.Parallel()
	runtimes := runtime.NewRegistry()
	if err := runtimes.Register(namedRuntime("plain")); err != nil {
		t.Fatal(err)
	}
	src := manifestHeader("plain-tool") + `actions:
  - name: act
    description: Does something unknown.
    execute:
      plain: {}
`
	tl := mustLoadSrc(t, src, tool.WithRuntimes(runtimes))
	cat := tl.Catalog(tool.Capability{})
	if len(cat) != 1 {
		t.Fatalf("want 1 entry, got %d", len(cat))
	}
	e := cat[0]
	if !e.IsDestructive || e.IsReadOnly || e.IsIdempotent || e.IsConcurrencySafe || e.RuntimeOwner != "local" ||
		e.InterruptBehavior != "block" || e.Capabilities == nil {
		t.Errorf("entry = %+v, want destructive, local, block, empty capabilities", e)
	}
	_, err := tool.Load(context.Background(), []byte(src))
	assertProblem(t, err, "actions[0].execute.plain", "unsupported")
}
