package tool_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	tool "github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/runtime"
	"github.com/commonagents-go/tool/tooltest"
)

const deployManifest = `kind: commonagents.info/v1beta2/tool
namespace: tests
name: deploy
description: Deploys services.
settings:
  properties:
    api: {type: string}
actions:
  - name: deploy
    description: Deploys a service.
    parameters:
      properties:
        service: {type: string}
        token: {type: string, format: password, default: "none"}
    execute:
      stateless_http:
        method: POST
        url: "{settings.api}/deploy"
        body: {service: "{parameters.service}", token: "{parameters.token}"}
  - name: status
    description: Shows a service's status.
    parameters:
      properties:
        service: {type: string}
    annotations: {read_only: false}
    execute:
      stateless_http:
        method: POST
        url: "{settings.api}/status"
        body: {service: "{parameters.service}"}
`

const celDeployManifest = `kind: commonagents.info/v1beta2/tool
namespace: tests
name: deploy
description: Deploys services.
actions:
  - name: deploy
    description: Deploys a service.
    parameters:
      properties:
        service: {type: string}
    execute:
      cel: {expression: "{'deployed': input.service}"}
`

type approvalEnv struct {
	srv  *tooltest.Server
	obs  *tooltest.Observer
	tool *tool.Tool
}

func newApprovalEnv(t *testing.T, opts ...tool.Option) approvalEnv {
	t.Helper()
	srv := tooltest.NewServer(t)
	srv.Handle("POST", "/deploy", tooltest.Response{Body: map[string]any{"ok": true}})
	srv.Handle("POST", "/status", tooltest.Response{Body: map[string]any{"up": true}})
	obs := tooltest.NewObserver()
	opts = append([]tool.Option{tool.WithSettings(map[string]any{"api": srv.URL}), tool.WithObserver(obs)}, opts...)
	return approvalEnv{srv: srv, obs: obs, tool: tooltest.Load(t, deployManifest, opts...)}
}

func TestApprovalDeniedLeavesNoTrace(t *testing.T) {
	env := newApprovalEnv(t, tool.WithLimits(tool.Limits{MaxCalls: 1}))
	var got []tool.ApprovalRequest
	deny := true
	task := tooltest.NewTask(t, env.tool, tool.TaskConfig{ID: "task-1",
		Capability: tool.Capability{Approve: []string{"deploy"}},
		Approver: tool.ApproverFunc(func(_ context.Context, r tool.ApprovalRequest) (tool.Approval, error) {
			got = append(got, r)
			return tool.Approval{Approved: !deny, Reason: "not on a Friday", By: "alice@example.com"}, nil
		})})

	ctx := tool.ContextWithCallID(context.Background(), "llm-call-1")
	res, err := task.Invoke(ctx, "deploy", map[string]any{"service": "billing", "token": "s3cr3t-value"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || res.Error.Kind != runtime.KindDenied || !strings.Contains(res.Error.Message, "not on a Friday") {
		t.Fatalf("result = %+v, want a denied result carrying the reason", res.Error)
	}
	if n := len(env.srv.Requests()); n != 0 {
		t.Fatalf("the backend received %d requests for a denied call", n)
	}
	if al := task.AllowList(); len(al["service"]) != 0 {
		t.Fatalf("a denied call grew the allow list: %v", al)
	}
	want := tool.ApprovalRequest{TaskID: "task-1", CallID: "llm-call-1", Action: "deploy", Function: "deploy_deploy",
		Arguments: map[string]any{"service": "billing", "token": "[redacted]"}}
	if len(got) != 1 {
		t.Fatalf("Approver asked %d times, want 1", len(got))
	}
	traits := got[0].Traits
	got[0].Traits = runtime.Traits{}
	if !reflect.DeepEqual(got[0], want) {
		t.Fatalf("ApprovalRequest = %+v\nwant %+v", got[0], want)
	}
	if !traits.Destructive || traits.ReadOnly || traits.Owner != "http" {
		t.Fatalf("traits = %+v, want those of an HTTP POST", traits)
	}
	decided := env.obs.Facts("tool.approval.decided")
	if len(decided) != 1 || decided[0].Data["by"] != "alice@example.com" || decided[0].Data["approved"] != false ||
		decided[0].CallID != "llm-call-1" {
		t.Fatalf("decided facts = %+v", decided)
	}
	requested := env.obs.Facts("tool.approval.requested")
	if len(requested) != 1 || strings.Contains(fmt.Sprint(requested[0].Data), "s3cr3t") {
		t.Fatalf("requested facts = %+v", requested)
	}
	if len(env.obs.Facts("tool.started")) != 0 {
		t.Fatal("a denied call reported tool.started")
	}

	// The denied call did not use up MaxCalls: the approved one runs.
	deny = false
	res, err = task.Invoke(context.Background(), "deploy", map[string]any{"service": "billing"})
	if err != nil || res.IsError {
		t.Fatalf("approved call: %v %+v", err, res)
	}
	if n := len(env.srv.Requests("/deploy")); n != 1 {
		t.Fatalf("the backend received %d requests, want 1", n)
	}
	if al := task.AllowList(); !reflect.DeepEqual(al["service"], []string{"billing"}) {
		t.Fatalf("allow list = %v", al)
	}
}

func TestApprovalOnlyForMarkedActions(t *testing.T) {
	env := newApprovalEnv(t)
	asked := 0
	task := tooltest.NewTask(t, env.tool, tool.TaskConfig{Capability: tool.Capability{Approve: []string{"deploy"}},
		Approver: tool.ApproverFunc(func(context.Context, tool.ApprovalRequest) (tool.Approval, error) {
			asked++
			return tool.Approval{}, nil
		})})
	if res, err := task.Invoke(context.Background(), "status", map[string]any{"service": "x"}); err != nil || res.IsError {
		t.Fatalf("status: %v %+v", err, res)
	}
	// Invalid arguments are refused before anyone is asked.
	if res, err := task.Invoke(context.Background(), "deploy", map[string]any{}); err != nil || res.Error.Kind != runtime.KindMissingFields {
		t.Fatalf("deploy without service: %v %+v", err, res)
	}
	if asked != 0 {
		t.Fatalf("Approver asked %d times, want 0", asked)
	}
	policies := map[string]string{}
	for _, e := range env.tool.Catalog(tool.Capability{Approve: []string{"deploy"}}) {
		policies[e.Action] = e.Policy
	}
	if !reflect.DeepEqual(policies, map[string]string{"deploy": "ask", "status": "allowed"}) {
		t.Fatalf("catalog policies = %v", policies)
	}
	for _, e := range env.tool.Catalog(tool.Capability{Approve: []string{"*"}, Include: []string{"status"}}) {
		if want := map[string]string{"deploy": "denied", "status": "ask"}[e.Action]; e.Policy != want {
			t.Fatalf("%s policy = %s, want %s", e.Action, e.Policy, want)
		}
	}
}

func TestApproverErrorIsRecoverable(t *testing.T) {
	env := newApprovalEnv(t)
	task := tooltest.NewTask(t, env.tool, tool.TaskConfig{Capability: tool.Capability{Approve: []string{"*"}},
		Approver: tool.ApproverFunc(func(context.Context, tool.ApprovalRequest) (tool.Approval, error) {
			return tool.Approval{}, errors.New("approval service down: internal-host-7")
		})})
	res, err := task.Invoke(context.Background(), "status", map[string]any{"service": "x"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || res.Error.Kind != runtime.KindDenied || !res.Error.Retryable ||
		strings.Contains(string(res.OutputJSON), "internal-host-7") {
		t.Fatalf("result = %s, want a retryable denied result without the approver's error", res.OutputJSON)
	}
	if n := len(env.srv.Requests()); n != 0 {
		t.Fatalf("the backend received %d requests", n)
	}
	if d := env.obs.Facts("tool.approval.decided"); len(d) != 1 || !strings.Contains(d[0].Data["error"].(string), "service down") {
		t.Fatalf("decided facts = %+v", d)
	}
}

// Waiting for a human holds no gate: a write call runs while another waits for approval, and the waiting call's
// arguments are not in the allow list yet.
func TestApprovalWaitHoldsNoGate(t *testing.T) {
	env := newApprovalEnv(t)
	asked, release := make(chan struct{}), make(chan struct{})
	task := tooltest.NewTask(t, env.tool, tool.TaskConfig{Capability: tool.Capability{Approve: []string{"deploy"}},
		Approver: tool.ApproverFunc(func(ctx context.Context, r tool.ApprovalRequest) (tool.Approval, error) {
			close(asked)
			<-release
			return tool.Approval{Approved: true, By: "bob"}, nil
		})})
	done := make(chan *tool.Result)
	go func() {
		res, _ := task.Invoke(context.Background(), "deploy", map[string]any{"service": "billing"})
		done <- res
	}()
	<-asked
	if res, err := task.Invoke(context.Background(), "status", map[string]any{"service": "search"}); err != nil || res.IsError {
		t.Fatalf("status while deploy waits: %v %+v", err, res)
	}
	if got := task.AllowList()["service"]; !reflect.DeepEqual(got, []string{"search"}) {
		t.Fatalf("allow list while deploy waits = %v", got)
	}
	close(release)
	if res := <-done; res == nil || res.IsError {
		t.Fatalf("deploy after approval: %+v", res)
	}
	if got := task.AllowList()["service"]; !reflect.DeepEqual(got, []string{"billing", "search"}) {
		t.Fatalf("allow list = %v", got)
	}
}

// Only the context bounds the wait: not the host's per-action timeout (the human took an hour, the action's limit
// is a minute). Cancelling the context, or closing the task, ends the wait as for any call.
func TestApprovalWaitBounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A cel action: synctest's bubble has no network.
		obs := tooltest.NewObserver()
		tl, err := tool.Load(context.Background(), []byte(celDeployManifest), tool.WithObserver(obs),
			tool.WithLimits(tool.Limits{ActionTimeouts: map[string]time.Duration{"deploy": time.Minute}}))
		if err != nil {
			t.Fatal(err)
		}
		task, err := tl.NewTask(context.Background(), tool.TaskConfig{Capability: tool.Capability{Approve: []string{"deploy"}},
			Approver: tool.ApproverFunc(func(ctx context.Context, r tool.ApprovalRequest) (tool.Approval, error) {
				if r.Arguments["service"] == "slow" {
					time.Sleep(time.Hour) // synctest's fake clock: the bubble's time jumps, no wall time passes
					return tool.Approval{Approved: true}, nil
				}
				<-ctx.Done()
				return tool.Approval{}, ctx.Err()
			})})
		if err != nil {
			t.Fatal(err)
		}
		res, err := task.Invoke(context.Background(), "deploy", map[string]any{"service": "slow"})
		if err != nil || res.IsError {
			t.Fatalf("approved after an hour: %v %+v", err, res.Error)
		}

		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Hour)
		defer cancel()
		_, err = task.Invoke(ctx, "deploy", map[string]any{"service": "waits"})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("cancelled wait: err = %v, want the context's error", err)
		}
		if c := obs.Facts("tool.cancelled"); len(c) != 1 {
			t.Fatalf("tool.cancelled facts = %d, want 1", len(c))
		}

		errc := make(chan error)
		go func() {
			_, err := task.Invoke(context.Background(), "deploy", map[string]any{"service": "waits"})
			errc <- err
		}()
		synctest.Wait()
		if err := task.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := <-errc; !errors.Is(err, tool.ErrClosed) {
			t.Fatalf("wait ended by Close: err = %v, want ErrClosed", err)
		}
		if n := len(obs.Facts("tool.result")); n != 1 {
			t.Fatalf("%d calls ran, want 1", n)
		}
	})
}

func TestApprovalNeedsApprover(t *testing.T) {
	env := newApprovalEnv(t)
	_, err := env.tool.NewTask(context.Background(), tool.TaskConfig{Capability: tool.Capability{Approve: []string{"deploy", "nope"}}})
	var verr *tool.ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("NewTask: err = %v, want a *ValidationError", err)
	}
	var paths []string
	for _, p := range verr.Problems {
		paths = append(paths, p.Path+" "+p.Type)
	}
	if want := []string{"approve[1] invalid", "approver required"}; !reflect.DeepEqual(paths, want) {
		t.Fatalf("problems = %v, want %v", paths, want)
	}
	if !strings.HasPrefix(err.Error(), "tool: invalid task configuration: 2 problems") {
		t.Fatalf("error = %q", err)
	}
}
