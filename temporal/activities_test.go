package temporaltool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	tool "github.com/commonagents-go/tool"
)

// script is the input of scriptWorkflow: calls to make in one task, with the attempt's bound.
type script struct {
	Task         TaskRef
	Calls        []Call
	StartToClose time.Duration
}

// report is what scriptWorkflow saw.
type report struct {
	Info     TaskInfo
	Outcomes []Outcome
	Elapsed  []time.Duration // workflow time each call took, retries included
	Ended    bool            // Ended(err) of the last call
	Err      string          // another error of the last call
	Closed   bool            // the deferred Close succeeded
}

// scriptWorkflow starts the task, makes the calls and closes the task, as an agent loop would.
func scriptWorkflow(ctx workflow.Context, s script) (r report, err error) {
	o := DefaultActivityOptions()
	if s.StartToClose > 0 {
		o.StartToCloseTimeout = s.StartToClose
	}
	ctx = workflow.WithActivityOptions(ctx, o)
	if r.Info, err = Start(ctx, StartInput{Task: s.Task}); err != nil {
		return r, err
	}
	defer func() { r.Closed = Close(ctx, s.Task) == nil }()
	for _, c := range s.Calls {
		c.Task = s.Task
		t0 := workflow.Now(ctx)
		out, err := Invoke(ctx, c)
		r.Elapsed = append(r.Elapsed, workflow.Now(ctx).Sub(t0))
		if err != nil {
			r.Ended, r.Err = Ended(err), err.Error()
			return r, nil
		}
		r.Outcomes = append(r.Outcomes, out)
	}
	return r, nil
}

// runScript runs s in a test workflow environment with w's real activities.
func runScript(t *testing.T, w *world, s script) report {
	t.Helper()
	return runScriptCut(t, w, s, nil)
}

// runScriptCut is runScript where attempt 1 of each call ends (its ctx is cancelled, as a worker's death would
// end it) once the channel cut gives for the call is closed: the request reached the shop.
func runScriptCut(t *testing.T, w *world, s script, cut func(Call) <-chan struct{}) report {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(scriptWorkflow)
	env.RegisterActivityWithOptions(w.acts.StartTask, activity.RegisterOptions{Name: ActivityStartTask})
	env.RegisterActivityWithOptions(w.acts.CloseTask, activity.RegisterOptions{Name: ActivityCloseTask})
	invoke := w.acts.Invoke
	if cut != nil {
		invoke = func(ctx context.Context, c Call) (Outcome, error) {
			if activity.GetInfo(ctx).Attempt == 1 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				defer cancel()
				go func() {
					select {
					case <-cut(c):
						cancel()
					case <-ctx.Done():
					}
				}()
			}
			return w.acts.Invoke(ctx, c)
		}
	}
	env.RegisterActivityWithOptions(invoke, activity.RegisterOptions{Name: ActivityInvoke})
	env.ExecuteWorkflow(scriptWorkflow, s)
	if !env.IsWorkflowCompleted() {
		t.Fatal("the workflow did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow: %v", err)
	}
	var r report
	if err := env.GetWorkflowResult(&r); err != nil {
		t.Fatal(err)
	}
	return r
}

func call(id, function, args string) Call {
	return Call{CallID: id, Function: function, Args: json.RawMessage(args)}
}

func TestRetriedAttemptOfANonIdempotentCallIsNotSent(t *testing.T) {
	s := newShop(t)
	w := newWorld(t, worldOptions{shopURL: s.URL})
	// Attempt 1 ends while the shop holds the POST: it reached the shop, and no reply came back.
	r := runScriptCut(t, w, script{Task: ref("acme-c1"),
		Calls: []Call{call("c1-1", "shop_place_order", `{"ref":"r1","item":"tea","delay_ms":60000}`)}},
		func(Call) <-chan struct{} { return s.arrival("POST /orders r1") })
	if got := s.count("POST /orders r1"); got != 1 {
		t.Errorf("the shop got %d POSTs, want 1", got)
	}
	if len(r.Outcomes) != 1 {
		t.Fatalf("outcomes %+v, error %q", r.Outcomes, r.Err)
	}
	o := r.Outcomes[0]
	if !o.IsError || o.Error == nil || !o.Error.OutcomeUnknown || o.Error.Retryable || o.Attempt < 2 {
		t.Fatalf("outcome %+v, want an outcome_unknown error of attempt 2 or later", o)
	}
	if !strings.Contains(o.Error.Hint, "check the state") || !strings.Contains(o.Text, "outcome_unknown") {
		t.Errorf("the model reads %s (hint %q): want outcome_unknown and the hint to check the state", o.Text, o.Error.Hint)
	}
	if !r.Closed {
		t.Error("Close failed")
	}
}

func TestRetriedAttemptOfAnIdempotentCallIsSent(t *testing.T) {
	s := newShop(t)
	w := newWorld(t, worldOptions{shopURL: s.URL})
	// Attempt 1 ends while the shop holds the GET; attempt 2 is not held (delay_ms is read at the first only).
	r := runScriptCut(t, w, script{Task: ref("acme-c2"),
		Calls: []Call{call("c2-1", "shop_get_order", `{"ref":"r2","delay_ms":60000}`)}},
		func(Call) <-chan struct{} { return s.arrival("GET /orders r2") })
	if got := s.count("GET /orders r2"); got != 2 {
		t.Errorf("the shop got %d GETs, want 2 (%s)", got, r.Err)
	}
	if len(r.Outcomes) != 1 || r.Outcomes[0].IsError || r.Outcomes[0].Attempt != 2 {
		t.Errorf("outcomes %+v (%q): want attempt 2's success", r.Outcomes, r.Err)
	}
}

func TestRetryAfterOfAnIdempotentCallBecomesNextRetryDelay(t *testing.T) {
	s := newShop(t)
	w := newWorld(t, worldOptions{shopURL: s.URL})
	r := runScript(t, w, script{Task: ref("acme-c3"), Calls: []Call{call("c3-1", "shop_quota", `{"key":"k"}`)}})
	if len(r.Outcomes) != 1 || r.Outcomes[0].IsError || r.Outcomes[0].Attempt != 2 {
		t.Fatalf("outcomes %+v (%q): want attempt 2's success", r.Outcomes, r.Err)
	}
	if got := s.count("GET /quota k"); got != 2 {
		t.Errorf("the shop got %d GETs, want 2", got)
	}
	if r.Elapsed[0] < 2*time.Second {
		t.Errorf("attempt 2 came %v after the first, want the Retry-After of 2s", r.Elapsed[0])
	}
}

func TestRetryAfterOfANonIdempotentCallGoesToTheModel(t *testing.T) {
	s := newShop(t)
	w := newWorld(t, worldOptions{shopURL: s.URL})
	r := runScript(t, w, script{Task: ref("acme-c4"), Calls: []Call{call("c4-1", "shop_busy_order", `{"ref":"b"}`)}})
	if len(r.Outcomes) != 1 || r.Outcomes[0].Error == nil || r.Outcomes[0].Error.Kind != "rate_limited" {
		t.Fatalf("outcomes %+v (%q): want rate_limited for the model", r.Outcomes, r.Err)
	}
	if r.Outcomes[0].Error.RetryAfter != 2*time.Second {
		t.Errorf("RetryAfter %v, want 2s", r.Outcomes[0].Error.RetryAfter)
	}
	if got := s.count("POST /busy b"); got != 1 {
		t.Errorf("the shop got %d POSTs, want 1", got)
	}
}

func TestResultOverTheBoundIsOmitted(t *testing.T) {
	s := newShop(t)
	w := newWorld(t, worldOptions{shopURL: s.URL, maxResult: 64 << 10})
	r := runScript(t, w, script{Task: ref("acme-c5"), Calls: []Call{
		call("c5-1", "shop_export", `{"size":300000}`), call("c5-2", "shop_export", `{"size":1000}`)}})
	if len(r.Outcomes) != 2 {
		t.Fatalf("outcomes %+v (%q)", r.Outcomes, r.Err)
	}
	big, small := r.Outcomes[0], r.Outcomes[1]
	if !big.Omitted || len(big.Text) > 1000 || !strings.Contains(big.Text, `"omitted"`) || big.OutputBytes < 300000 {
		t.Errorf("the 300 kB export reached the model as %d bytes (omitted %v, output %d bytes): %.200s",
			len(big.Text), big.Omitted, big.OutputBytes, big.Text)
	}
	if small.Omitted || len(small.Text) < 1000 {
		t.Errorf("the 1 kB export: omitted %v, %d bytes", small.Omitted, len(small.Text))
	}
}

func TestUnrecoverableErrorEndsTheConversationAndClosesTheTask(t *testing.T) {
	s := newShop(t)
	w := newWorld(t, worldOptions{shopURL: s.URL, deadURL: deadURL(t)})
	r := runScript(t, w, script{Task: ref("acme-c6"), Calls: []Call{
		call("c6-1", "shop_get_order", `{"ref":"x"}`), call("c6-2", "shop_legacy_ping", `{}`),
		call("c6-3", "shop_get_order", `{"ref":"y"}`)}})
	if !r.Ended || !strings.Contains(r.Err, ErrorUnrecoverable) || len(r.Outcomes) != 1 {
		t.Fatalf("report %+v: want the conversation ended by %s after one call", r, ErrorUnrecoverable)
	}
	if !r.Closed {
		t.Error("the deferred Close failed")
	}
	if _, _, err := w.router.Task(context.Background(), "examples", "shop", "acme-c6"); !errors.Is(err, tool.ErrNotFound) {
		t.Errorf("the task after Close: %v, want ErrNotFound", err)
	}
}

func TestCallOfATaskThatIsGoneEndsTheConversation(t *testing.T) {
	s := newShop(t)
	w := newWorld(t, worldOptions{shopURL: s.URL})
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	Register(env, w.acts)
	env.ExecuteWorkflow(func(ctx workflow.Context) (bool, error) {
		ctx = workflow.WithActivityOptions(ctx, DefaultActivityOptions())
		_, err := Invoke(ctx, Call{Task: ref("acme-never"), CallID: "n-1", Function: "shop_get_order", Args: []byte(`{}`)})
		return Ended(err), nil
	})
	var ended bool
	if err := env.GetWorkflowResult(&ended); err != nil || !ended {
		t.Errorf("Ended %v (%v), want true for a task never started", ended, err)
	}
}

func TestStartTaskAgainLendsTheStoredTask(t *testing.T) {
	s := newShop(t)
	w := newWorld(t, worldOptions{shopURL: s.URL})
	var env testsuite.WorkflowTestSuite
	a := env.NewTestActivityEnvironment()
	Register(a, w.acts)
	for i := range 2 {
		v, err := a.ExecuteActivity(ActivityStartTask, StartInput{Task: ref("acme-c7")})
		if err != nil {
			t.Fatalf("StartTask %d: %v", i+1, err)
		}
		var info TaskInfo
		if err := v.Get(&info); err != nil {
			t.Fatal(err)
		}
		if len(info.Functions) != 8 || info.EventTimeouts["order_shipped"] != time.Minute {
			t.Errorf("StartTask %d: %d functions, timeouts %v", i+1, len(info.Functions), info.EventTimeouts)
		}
	}
	if _, err := a.ExecuteActivity(ActivityStartTask, StartInput{Task: ref("acme-none"), MustExist: true}); err == nil ||
		!strings.Contains(err.Error(), ErrorTaskGone) {
		t.Errorf("MustExist for a task not stored: %v, want %s", err, ErrorTaskGone)
	}
	if _, err := a.ExecuteActivity(ActivityStartTask, StartInput{V: Version + 1, Task: ref("acme-c8")}); err == nil ||
		!strings.Contains(err.Error(), ErrorInvalid) {
		t.Errorf("a newer V: %v, want %s", err, ErrorInvalid)
	}
}

func TestSecretSettingIsMaskedInOutcomes(t *testing.T) {
	s := newShop(t)
	w := newWorld(t, worldOptions{shopURL: s.URL})
	r := runScript(t, w, script{Task: ref("acme-c9"), Calls: []Call{
		call("c9-1", "shop_echo", `{}`), call("c9-2", "shop_echo", `{"fail":true}`)}})
	b, _ := json.Marshal(r)
	if len(r.Outcomes) != 2 || strings.Contains(string(b), testAPIKey) || !strings.Contains(string(b), "[redacted]") {
		t.Errorf("outcomes %s: want the key redacted", b)
	}
}

// attemptFunc replaces an attempt of Invoke.
type attemptFunc = func(ctx context.Context, c Call) (Outcome, error)

// runWithEarlyAttempts runs s with the first attempts of every call replaced by early's (the later ones are
// Invoke's).
func runWithEarlyAttempts(t *testing.T, w *world, s script, early ...attemptFunc) report {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(scriptWorkflow)
	env.RegisterActivityWithOptions(w.acts.StartTask, activity.RegisterOptions{Name: ActivityStartTask})
	env.RegisterActivityWithOptions(w.acts.CloseTask, activity.RegisterOptions{Name: ActivityCloseTask})
	env.RegisterActivityWithOptions(func(ctx context.Context, c Call) (Outcome, error) {
		if n := int(activity.GetInfo(ctx).Attempt); n <= len(early) {
			return early[n-1](ctx, c)
		}
		return w.acts.Invoke(ctx, c)
	}, activity.RegisterOptions{Name: ActivityInvoke})
	env.ExecuteWorkflow(scriptWorkflow, s)
	var r report
	if err := env.GetWorkflowResult(&r); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestAttemptAfterALendFailureSends: an attempt whose lend failed (a Store outage) records that it sent
// nothing, so the next attempt of a non-idempotent call sends; an attempt that failed otherwise (it may have
// sent) records nothing of the kind, and the next one answers outcome_unknown.
func TestAttemptAfterALendFailureSends(t *testing.T) {
	s := newShop(t)
	w := newWorld(t, worldOptions{shopURL: s.URL})
	place := func(task, order string) script {
		return script{Task: ref(task), Calls: []Call{call(task+"-1", "shop_place_order",
			fmt.Sprintf(`{"ref":%q,"item":"tea"}`, order))}}
	}
	lendFailed := func(ctx context.Context, c Call) (Outcome, error) {
		return Outcome{}, w.acts.unsent(ctx, activity.GetInfo(ctx).Attempt, errors.New("store: connection refused"))
	}
	r := runWithEarlyAttempts(t, w, place("acme-l1", "l1"), lendFailed)
	if len(r.Outcomes) != 1 || r.Outcomes[0].IsError || s.count("POST /orders l1") != 1 {
		t.Errorf("after a failed lend: outcomes %+v (%q), %d POSTs: want attempt 2 to send", r.Outcomes, r.Err,
			s.count("POST /orders l1"))
	}
	mayHaveSent := func(ctx context.Context, c Call) (Outcome, error) {
		activity.RecordHeartbeat(ctx, progress{}) // what the heartbeats during a send record
		return Outcome{}, errors.New("worker lost")
	}
	for i, early := range [][]attemptFunc{{mayHaveSent}, {mayHaveSent, lendFailed}, {lendFailed, mayHaveSent}} {
		order := fmt.Sprintf("m%d", i)
		r = runWithEarlyAttempts(t, w, place("acme-"+order, order), early...)
		if len(r.Outcomes) != 1 || r.Outcomes[0].Error == nil || !r.Outcomes[0].Error.OutcomeUnknown ||
			s.count("POST /orders "+order) != 0 {
			t.Errorf("after %d early attempts, #%d: outcomes %+v (%q), %d POSTs: want outcome_unknown, no POST",
				len(early), i, r.Outcomes, r.Err, s.count("POST /orders "+order))
		}
	}
	r = runWithEarlyAttempts(t, w, place("acme-l3", "l3"), lendFailed, lendFailed)
	if len(r.Outcomes) != 1 || r.Outcomes[0].IsError || s.count("POST /orders l3") != 1 {
		t.Errorf("after two failed lends: outcomes %+v (%q): want attempt 3 to send", r.Outcomes, r.Err)
	}
}
