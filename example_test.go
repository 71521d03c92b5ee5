package tool_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/field"
	"github.com/commonagents-go/tool/interp"
	"github.com/commonagents-go/tool/runtime"
)

// echoBackend is a third-party action backend: `execute: {echo: {message: "..."}}`.
type echoBackend struct{}

// echoConfig is an echo block.
type echoConfig struct {
	Message string `json:"message"`
}

// echoAction is a prepared echo block. It describes itself to the catalog.
type echoAction struct {
	message *interp.Template
}

func (*echoAction) Traits() runtime.Traits {
	return runtime.Traits{ReadOnly: true, Idempotent: true, ConcurrencySafe: true, Owner: "local",
		Capabilities: []string{"read"}}
}

func (echoBackend) Kind() string { return "echo" }

// Prepare decodes the block strictly and checks its template against the manifest's declarations, so every
// problem is reported at its own path.
func (echoBackend) Prepare(_ context.Context, b *runtime.Block) (runtime.Action, error) {
	var cfg echoConfig
	errs := b.Decode(&cfg)
	a := &echoAction{}
	if cfg.Message == "" {
		errs.Add(field.Required(b.Path.Child("message"), "message is required"))
	} else {
		t, e := b.Check.Template(b.Path.Child("message"), cfg.Message, runtime.ExecuteRoots...)
		errs = append(errs, e...)
		a.message = t
	}
	return a, errs.Err()
}

// Initialize runs once per task, on the first call; an echo needs no connection, so the instance is empty.
func (echoBackend) Initialize(context.Context, *runtime.Init) (runtime.Instance, error) {
	return echoInstance{}, nil
}

// echoInstance is the echo backend initialized for one task.
type echoInstance struct{}

// Invoke renders the message with the call's values: {parameters.*}, {settings.*} and the other roots come
// from call.Values, so the backend never sees how they were resolved.
func (echoInstance) Invoke(_ context.Context, a runtime.Action, call *runtime.Call) (*runtime.Result, error) {
	msg, err := a.(*echoAction).message.RenderString(call.Values)
	if err != nil {
		return nil, err
	}
	if msg == "" {
		return runtime.Fail(runtime.Errorf(runtime.KindInvalidArguments, "nothing to echo")), nil
	}
	return &runtime.Result{Output: msg}, nil
}

func (echoInstance) Teardown(context.Context) error { return nil }

var (
	_ runtime.Runtime   = echoBackend{}
	_ runtime.Instance  = echoInstance{}
	_ runtime.Describer = (*echoAction)(nil)
)

func ExampleLoad() {
	manifest := []byte(`
kind: commonagents.info/v1beta2/tool
namespace: docs
name: text-helpers
description: Small text helpers.
parameters:
  properties:
    locale: { type: string, default: en, require_binding: true }
actions:
  - name: slugify
    description: Turns a title into a URL slug.
    parameters:
      properties:
        title: { type: string, description: The text to turn into a slug. }
    execute:
      cel:
        expression: "input.title.lowerAscii().replace(' ', '-')"
  - name: count-words
    description: Counts the words of a text.
    parameters:
      properties:
        text: { type: string }
    execute:
      cel:
        expression: "size(input.text.split(' '))"
`)
	t, err := tool.Load(context.Background(), manifest)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range t.Functions(tool.Capability{Key: "text", Bindings: map[string]any{"locale": "fr"}}) {
		fmt.Println(f.Name)
		fmt.Println(string(f.Parameters))
	}
	// Output:
	// text_slugify
	// {"type":"object","properties":{"title":{"description":"The text to turn into a slug.","type":"string"}},"required":["title"],"additionalProperties":false}
	// text_count_words
	// {"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}
}

func ExampleLoad_validationErrors() {
	manifest := []byte(`
kind: commonagents.info/v1beta2/tool
namespace: docs
name: broken
description: A manifest with three mistakes.
actions:
  - name: fetch
    description: Fetches a page.
    execute:
      stateless_http:
        method: FETCH
        url: "https://example.com/{parameters.page}"
  - name: fetch
    description: The same name again.
    execute:
      cel:
        expression: "'ok'"
`)
	_, err := tool.Load(context.Background(), manifest)
	var verr *tool.ValidationError
	if errors.As(err, &verr) {
		for _, p := range verr.Problems {
			fmt.Println(p.Type, p.Path)
		}
	}
	// Output:
	// unsupported actions[0].execute.stateless_http.method
	// invalid actions[0].execute.stateless_http.url
	// duplicate actions[1].name
}

// Example_customRuntime registers a third-party backend in a clone of the default registry: the default registry
// is left as it was, and only the Load given the clone knows the new kind.
func Example_customRuntime() {
	runtimes := runtime.Default().Clone()
	if err := runtimes.Register(echoBackend{}); err != nil {
		fmt.Println(err)
		return
	}
	manifest := []byte(`
kind: commonagents.info/v1beta2/tool
namespace: docs
name: greeter
description: Greets people.
actions:
  - name: greet
    description: Says hello.
    parameters:
      properties:
        name: { type: string }
    execute:
      echo:
        message: "hi {parameters.name}"
`)
	t, err := tool.Load(context.Background(), manifest, tool.WithRuntimes(runtimes))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range t.Functions(tool.Capability{}) {
		fmt.Println(f.Name, string(f.Parameters))
	}
	for _, e := range t.Catalog(tool.Capability{}) {
		fmt.Println(e.Function, "owner:", e.RuntimeOwner, "read-only:", e.IsReadOnly)
	}
	_, known := runtime.Default().Lookup("echo")
	fmt.Println("echo in the default registry:", known)

	task, err := t.NewTask(context.Background(), tool.TaskConfig{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer task.Close(context.Background())
	res, err := task.InvokeFunction(context.Background(), "greeter", []byte(`{"name": "Ada"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("greeter says:", string(res.OutputJSON))
	// Output:
	// greeter {"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false}
	// greeter owner: local read-only: true
	// echo in the default registry: false
	// greeter says: "hi Ada"
}

// ExampleTask_Invoke runs a cel action: the bound parameter is hidden from the LLM and always wins, the default
// fills what the LLM left out, and a missing argument is a result the LLM can correct, not a Go error.
func ExampleTask_Invoke() {
	manifest := []byte(`
kind: commonagents.info/v1beta2/tool
namespace: docs
name: pricing
description: Prices orders.
parameters:
  properties:
    currency: { type: string, require_binding: true }
actions:
  - name: quote
    description: Prices a quantity of items.
    parameters:
      properties:
        quantity: { type: integer, minimum: 1 }
        unit_price: { type: number, default: 2.5 }
    execute:
      cel:
        expression: "{'total': double(input.quantity) * input.unit_price, 'currency': input.currency}"
`)
	ctx := context.Background()
	t, err := tool.Load(ctx, manifest)
	if err != nil {
		fmt.Println(err)
		return
	}
	task, err := t.NewTask(ctx, tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"currency": "EUR"}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer task.Close(ctx)

	res, err := task.Invoke(ctx, "quote", map[string]any{"quantity": 4})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(res.OutputJSON))

	res, _ = task.Invoke(ctx, "quote", map[string]any{})
	fmt.Println(res.Error.Kind, res.Error.Hint.MissingFields)
	// Output:
	// {"currency":"EUR","total":10}
	// missing_fields [quantity]
}
