package tool_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/tooltest"
)

// ciManifest is a tool with one webhook event: a failed build of the task's repository wakes the task.
const ciManifest = `
kind: commonagents.info/v1beta2/tool
namespace: docs
name: ci
description: Follows CI builds.
settings:
  properties:
    webhook_secret: {type: string, format: password}
parameters:
  properties:
    repo: {type: string, require_binding: true}
events:
  - name: build_failed
    description: A build of the repository failed.
    message: "Build {event.payload.build} of {event.payload.repo} failed"
    receive:
      webhook:
        secret: "{settings.webhook_secret}"
        filter: "event.payload.status == 'failed' && event.payload.repo == parameters.repo"
`

// ExampleTask_Deliver routes pushed payloads into one task without HTTP: the signature is checked over the raw
// body, the filter sees the task's allow list, and the Delivery says what happened to each event.
func ExampleTask_Deliver() {
	ctx := context.Background()
	t, err := tool.Load(ctx, []byte(ciManifest), tool.WithSettings(map[string]any{"webhook_secret": "s3cr3t"}))
	if err != nil {
		fmt.Println(err)
		return
	}
	task, err := t.NewTask(ctx, tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo": "api"}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer task.Close(ctx)

	signer := tooltest.Signer{Secret: "s3cr3t"} // signs as GitHub does: X-Hub-Signature-256 and X-GitHub-Delivery
	for _, body := range []string{
		`{"repo": "api", "build": 41, "status": "failed"}`,
		`{"repo": "web", "build": 7, "status": "failed"}`, // another repository: not this task's
	} {
		d, err := task.Deliver(ctx, signer.GitHub([]byte(body), fmt.Sprint("delivery-", len(body))))
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, a := range d.Activations {
			fmt.Println("activated:", a.Message)
		}
		for _, x := range d.Discarded {
			fmt.Println("discarded:", x.Event, x.Reason)
		}
	}
	forged := &tool.Inbound{Body: []byte(`{"repo": "api", "build": 42, "status": "failed"}`)}
	d, _ := task.Deliver(ctx, forged) // no signature
	fmt.Println("discarded:", d.Discarded[0].Event, d.Discarded[0].Reason)
	// Output:
	// activated: Build 41 of api failed
	// discarded: build_failed filter_false
	// discarded: build_failed bad_signature
}

// ExampleRouter serves the webhook endpoint for many tasks: a payload goes to the tasks it is for, and the sender
// gets 202 once every Sink accepted.
func ExampleRouter() {
	ctx := context.Background()
	t, err := tool.Load(ctx, []byte(ciManifest), tool.WithSettings(map[string]any{"webhook_secret": "s3cr3t"}))
	if err != nil {
		fmt.Println(err)
		return
	}
	router := tool.NewRouter(tool.RouterOptions{})
	mux := http.NewServeMux()
	router.Register(mux) // POST /v1/webhooks/events/{namespace}/{tool}

	for _, repo := range []string{"api", "web"} {
		task, err := t.NewTask(ctx, tool.TaskConfig{
			Capability: tool.Capability{Bindings: map[string]any{"repo": repo}},
			Sink: tool.SinkFunc(func(ctx context.Context, a tool.Activation) error {
				fmt.Printf("task for %s: %s\n", repo, a.Message) // a real host queues it for the agent
				return nil
			}),
		})
		if err != nil {
			fmt.Println(err)
			return
		}
		defer task.Close(ctx)
		if err := router.Add(task); err != nil {
			fmt.Println(err)
			return
		}
	}

	in := tooltest.Signer{Secret: "s3cr3t"}.GitHub([]byte(`{"repo": "web", "build": 7, "status": "failed"}`), "d-1")
	w := httptest.NewRecorder() // in production: http.ListenAndServe(addr, mux)
	mux.ServeHTTP(w, tooltest.HTTPRequest("/v1/webhooks/events/docs/ci", in))
	fmt.Println(w.Code, http.StatusText(w.Code))
	// Output:
	// task for web: Build 7 of web failed
	// 202 Accepted
}

// ExampleLoadFile loads a manifest from a file and shows its functions as an LLM sees them; a string output goes
// back to the LLM as plain text.
func ExampleLoadFile() {
	ctx := context.Background()
	t, err := tool.LoadFile(ctx, "testdata/ok/cel.yaml", tool.WithSettings(map[string]any{"github.token": "ghp_example"}))
	if err != nil {
		fmt.Println(err) // a *tool.ValidationError lists every problem with its path, line and column
		return
	}
	task, err := t.NewTask(ctx, tool.TaskConfig{
		Capability: tool.Capability{Key: "text", Include: []string{"slugify", "whoami"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer task.Close(ctx)
	for _, f := range task.Functions() { // what to offer the LLM: the task's own capability
		properties, required := f.Properties()
		fmt.Println(f.Name, len(properties), "parameters, required:", required)
	}
	res, err := task.InvokeFunction(ctx, "text_slugify", []byte(`{"title": "Hello Agent World", "separator": null}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Text())
	// Output:
	// text_slugify 2 parameters, required: [title]
	// text_whoami 0 parameters, required: []
	// {"length":17,"slug":"hello-agent-world"}
}
