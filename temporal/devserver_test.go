package temporaltool

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/encoding/protojson"

	tool "github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/tooltest"
)

// The tests against a real Temporal dev server (scripts/temporal.sh start sets TOOL_TEST_TEMPORAL_ADDR) and,
// where replicas share a Store, a real PostgreSQL (scripts/postgres.sh start sets TOOL_TEST_POSTGRES_DSN).
// Without them they skip, saying why, except under CI, where they fail.

var updateHistories = flag.Bool("update-histories", false, "rewrite testdata/histories from the dev server")

// need returns the environment variable name, skipping t without it (failing it under CI).
func need(t testing.TB, name, how string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		if _, ci := os.LookupEnv("CI"); ci {
			t.Fatalf("%s is unset in CI: %s", name, how)
		}
		t.Skipf("%s is unset: %s", name, how)
	}
	return v
}

func temporalAddr(t testing.TB) string {
	return need(t, "TOOL_TEST_TEMPORAL_ADDR", "start a dev server with scripts/temporal.sh start")
}

func postgresDSN(t testing.TB) string {
	return need(t, "TOOL_TEST_POSTGRES_DSN", "start a server with scripts/postgres.sh start")
}

// nonce is a fresh suffix for task IDs and task queues: the dev server and the database outlive a test run.
func nonce() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// dial is a client of the dev server, closed when t ends.
func dial(t testing.TB) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: temporalAddr(t), Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// inProcessWorker starts a worker of cfg in this process, stopped when t ends.
func inProcessWorker(t testing.TB, cfg workerConfig) *runningWorker {
	t.Helper()
	rw, err := startWorker(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rw.close)
	return rw
}

// history returns the events of the workflow id's latest run.
func history(t testing.TB, c client.Client, id string) []*historypb.HistoryEvent {
	t.Helper()
	var events []*historypb.HistoryEvent
	it := c.GetWorkflowHistory(context.Background(), id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, e)
	}
	return events
}

// historyJSON is the history as `temporal workflow show -o json` writes it.
func historyJSON(t testing.TB, events []*historypb.HistoryEvent) []byte {
	t.Helper()
	b, err := protojson.MarshalOptions{Indent: "  "}.Marshal(&historypb.History{Events: events})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// historyText is the history's JSON followed by every base64 string in it, decoded (the payloads).
func historyText(t testing.TB, events []*historypb.HistoryEvent) []byte {
	t.Helper()
	raw := historyJSON(t, events)
	text := bytes.Clone(raw)
	for _, field := range bytes.Split(raw, []byte(`"`)) {
		if dec, err := base64.StdEncoding.DecodeString(string(field)); err == nil && len(field) > 0 {
			text = append(append(text, '\n'), dec...)
		}
	}
	return text
}

// secretsIn counts the secret settings in the history, raw and base64-decoded.
func secretsIn(t testing.TB, events []*historypb.HistoryEvent) int {
	t.Helper()
	text := historyText(t, events)
	return bytes.Count(text, []byte(testAPIKey)) + bytes.Count(text, []byte(testWebhookSecret))
}

// count is how many events of type typ the history holds.
func count(events []*historypb.HistoryEvent, typ enums.EventType) int {
	n := 0
	for _, e := range events {
		if e.GetEventType() == typ {
			n++
		}
	}
	return n
}

// run starts workflow name with in on queue and waits for its result.
func run(t testing.TB, c client.Client, queue, id, name string, in, out any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	wr, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue,
		WorkflowExecutionTimeout: 5 * time.Minute}, name, in)
	if err != nil {
		t.Fatal(err)
	}
	if err := wr.Get(ctx, out); err != nil {
		t.Fatalf("workflow %s: %v", id, err)
	}
}

func TestAgentLoopOnADevServer(t *testing.T) {
	c := dial(t)
	s := newShop(t)
	queue := "agent-" + nonce()
	inProcessWorker(t, workerConfig{TemporalAddr: temporalAddr(t), TaskQueue: queue, ShopURL: s.URL,
		DeadURL: deadURL(t), ReplicaID: "w1", Temporal: true})
	id := "acme-agent-" + nonce()
	args := func(v string) json.RawMessage { return json.RawMessage(v) }
	in := AgentInput{Task: ref(id), WaitTimeout: 2 * time.Second, Script: []Turn{
		{Calls: []ToolCall{{Name: "shop_total", Args: args(`{"first":1,"second":2}`)},
			{Name: "shop_echo", Args: args(`{}`)}, {Name: "shop_echo", Args: args(`{"fail":true}`)}}},
		{Calls: []ToolCall{{Name: "shop_export", Args: args(`{"size":600000}`)}}},
		{Calls: []ToolCall{{Name: "shop_place_order", Args: args(`{"ref":"o1","item":"tea"}`)}}},
		{WaitFor: "order_shipped"},
		{Answer: "Your tea is ordered."},
	}}
	var r AgentResult
	run(t, c, queue, id, agentWorkflowName, in, &r)
	if r.Answer != "Your tea is ordered." || len(r.Outcomes) != 5 {
		t.Fatalf("result %+v", r)
	}
	if !strings.Contains(r.Outcomes[0].Text, `"total":3`) {
		t.Errorf("total: %s", r.Outcomes[0].Text)
	}
	if big := r.Outcomes[3]; !big.Omitted || len(big.Text) > 1000 {
		t.Errorf("the 600 kB export reached the model as %d bytes (omitted %v)", len(big.Text), big.Omitted)
	}
	if last := r.Transcript[len(r.Transcript)-1]; last.Text != "no order_shipped within 2s" {
		t.Errorf("the wait ended with %q, want the timer's", last.Text)
	}
	events := history(t, c, id)
	if n := count(events, enums.EVENT_TYPE_TIMER_FIRED); n != 1 {
		t.Errorf("%d timers fired, want 1", n)
	}
	if n := secretsIn(t, events); n != 0 {
		t.Errorf("the history holds a secret setting %d times", n)
	}
	if !bytes.Contains(historyText(t, events), []byte("[redacted]")) {
		t.Error("the history holds no [redacted]: did the echo calls run?")
	}
	if *updateHistories {
		if err := os.WriteFile(filepath.Join("testdata", "histories", "agent.json"), historyJSON(t, events), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWebhookWakesTheWorkflowOncePerActivationID: worker A runs the activities, so place_order grows the
// task's allow list there; replica B only takes webhooks, from a Router in store mode over the same PostgreSQL,
// and its Sink loses every 7th reply (the webhook is answered 503 after the signal went out). 100 deliveries,
// each sent to B until it is accepted and then once more to A: the workflow takes each Activation.ID once.
func TestWebhookWakesTheWorkflowOncePerActivationID(t *testing.T) {
	dsn := postgresDSN(t)
	c := dial(t)
	s := newShop(t)
	queue := "webhook-" + nonce()
	inProcessWorker(t, workerConfig{TemporalAddr: temporalAddr(t), TaskQueue: queue, DSN: dsn, ShopURL: s.URL,
		ReplicaID: "a", Temporal: true})
	b := inProcessWorker(t, workerConfig{TemporalAddr: temporalAddr(t), TaskQueue: queue, DSN: dsn, ShopURL: s.URL,
		ReplicaID: "b", LostReplyEvery: 7})
	a := inProcessWorker(t, workerConfig{TemporalAddr: temporalAddr(t), TaskQueue: queue, DSN: dsn, ShopURL: s.URL,
		ReplicaID: "a-hooks"})
	id, orderRef := "acme-hooks-"+nonce(), "r-"+nonce()
	const n = 100
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	wr, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, collectWorkflowName,
		CollectInput{Task: ref(id), Ref: orderRef, Want: n, Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.arrival("POST /orders " + orderRef): // the allow list holds the ref before the POST is sent
	case <-ctx.Done():
		t.Fatal("place_order never reached the shop")
	}
	signer := tooltest.Signer{Secret: testWebhookSecret}
	sent, retried := map[string]bool{}, 0
	for i := range n {
		body := fmt.Appendf(nil, `{"account":"acme","ref":%q,"n":%d}`, orderRef, i)
		in := signer.GitHub(body, fmt.Sprintf("%s-d%d", id, i))
		for status := 0; status != http.StatusAccepted; {
			if status != 0 {
				retried++
			}
			status = post(t, b.webhook, in)
			if status != http.StatusAccepted && status != http.StatusServiceUnavailable {
				t.Fatalf("delivery %d: %d", i, status)
			}
		}
		if status := post(t, a.webhook, in); status != http.StatusAccepted { // a duplicate at the other replica
			t.Fatalf("delivery %d again: %d", i, status)
		}
		sent[in.Headers.Get("X-GitHub-Delivery")] = true
	}
	var r CollectResult
	if err := wr.Get(ctx, &r); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, id := range r.IDs {
		if seen[id] {
			t.Errorf("activation %s taken twice", id)
		}
		seen[id] = true
	}
	if len(seen) != n || r.TimedOut {
		t.Errorf("the workflow took %d activations (timed out %v), want %d", len(seen), r.TimedOut, n)
	}
	signals := count(history(t, c, id), enums.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED)
	if retried == 0 || signals <= n {
		t.Errorf("%d retried deliveries, %d signals: the test lost no reply", retried, signals)
	}
	t.Logf("%d deliveries, %d retried after a lost reply, %d signals, %d activations taken", n, retried, signals, len(seen))
}

// post sends in to url and returns the status. (tooltest.HTTPRequest is a server-side request, which an
// http.Client refuses.)
func post(t testing.TB, url string, in *tool.Inbound) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(in.Body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range in.Headers {
		req.Header[k] = v
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// TestCancelledCallIsCancelledThroughHeartbeats: Temporal tells an activity of its cancellation in the reply to a
// heartbeat; Invoke heartbeats while the call runs, so the call's request is cancelled at the shop.
func TestCancelledCallIsCancelledThroughHeartbeats(t *testing.T) {
	c := dial(t)
	s := newShop(t)
	queue := "cancel-" + nonce()
	inProcessWorker(t, workerConfig{TemporalAddr: temporalAddr(t), TaskQueue: queue, ShopURL: s.URL,
		ReplicaID: "w1", Temporal: true})
	id, order := "acme-cancel-"+nonce(), "c-"+nonce()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	wr, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, cancelWorkflowName,
		Call{V: Version, Task: ref(id), CallID: id + "-1", Function: "shop_get_order",
			Args: json.RawMessage(fmt.Sprintf(`{"ref":%q,"delay_ms":60000}`, order))})
	if err != nil {
		t.Fatal(err)
	}
	<-s.arrival("GET /orders " + order)
	if err := c.SignalWorkflow(ctx, id, "", "cancel", nil); err != nil {
		t.Fatal(err)
	}
	var got string
	if err := wr.Get(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "canceled") {
		t.Errorf("the call ended with %q, want its cancellation", got)
	}
	select {
	case <-s.arrival("cancelled /orders/" + order):
	case <-ctx.Done():
		t.Error("the shop's request was not cancelled")
	}
}

// TestActivationForAnEndedConversation: a conversation terminated while it waited (its deferred Close never ran)
// leaves its task stored. An activation for it then reaches a Sink whose workflow is gone. The Signal Sink
// accepts it (202: no retry can deliver it) and tells SinkOptions.Ended, where the host closes the task; the
// SignalWithStart Sink starts a run that lends the stored task, takes the activation and closes the task.
func TestActivationForAnEndedConversation(t *testing.T) {
	dsn := postgresDSN(t)
	c := dial(t)
	s := newShop(t)
	queue := "ended-" + nonce()
	var mu sync.Mutex
	var ended []tool.Activation
	signal := inProcessWorker(t, workerConfig{TemporalAddr: temporalAddr(t), TaskQueue: queue, DSN: dsn,
		ShopURL: s.URL, ReplicaID: "signal", Temporal: true, Sink: &SinkOptions{
			Ended: func(_ context.Context, a tool.Activation) { mu.Lock(); ended = append(ended, a); mu.Unlock() }}})
	starter := inProcessWorker(t, workerConfig{TemporalAddr: temporalAddr(t), TaskQueue: queue, DSN: dsn,
		ShopURL: s.URL, ReplicaID: "start", Sink: &SinkOptions{Start: &StartOptions{
			Options:  client.StartWorkflowOptions{TaskQueue: queue},
			Workflow: wakeWorkflowName,
			Args:     func(a tool.Activation) []any { return []any{ref(a.TaskID)} }}}})
	for _, tc := range []struct {
		name string
		hook *runningWorker
	}{{"signal", signal}, {"signal-with-start", starter}} {
		t.Run(tc.name, func(t *testing.T) {
			id, order := "acme-ended-"+nonce(), "e-"+nonce()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			in := AgentInput{Task: ref(id), WaitTimeout: time.Hour, Script: []Turn{
				{Calls: []ToolCall{{Name: "shop_place_order", Args: json.RawMessage(fmt.Sprintf(`{"ref":%q,"item":"tea"}`, order))}}},
				{WaitFor: "order_shipped"}}}
			if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, agentWorkflowName, in); err != nil {
				t.Fatal(err)
			}
			for count(history(t, c, id), enums.EVENT_TYPE_TIMER_STARTED) == 0 { // waiting for the event
				select {
				case <-ctx.Done():
					t.Fatal("the conversation never waited")
				case <-time.After(100 * time.Millisecond):
				}
			}
			if err := c.TerminateWorkflow(ctx, id, "", "test"); err != nil {
				t.Fatal(err)
			}
			body := fmt.Appendf(nil, `{"account":"acme","ref":%q,"n":7}`, order)
			if status := post(t, tc.hook.webhook, tooltest.Signer{Secret: testWebhookSecret}.GitHub(body, id+"-late")); status != http.StatusAccepted {
				t.Fatalf("webhook: %d", status)
			}
			if tc.hook == signal {
				mu.Lock()
				got := len(ended) == 1 && ended[0].TaskID == id
				mu.Unlock()
				if !got {
					t.Fatalf("Ended heard %v, want the activation of %s", ended, id)
				}
				if _, release, err := signal.world.router.Task(ctx, "examples", "shop", id); err != nil {
					t.Fatalf("the task of the terminated conversation: %v, want it stored", err)
				} else {
					release()
				}
				if err := signal.world.router.CloseTask(ctx, "examples", "shop", id); err != nil { // what Ended's host does
					t.Fatal(err)
				}
			} else {
				var msg string
				if err := c.GetWorkflow(ctx, id, "").Get(ctx, &msg); err != nil || !strings.Contains(msg, order+" shipped (7)") {
					t.Fatalf("the started run returned %q (%v)", msg, err)
				}
			}
			// Asked of the replica that ran the activities: the starter's Router may still lend the copy it
			// cached for the webhook (store mode re-reads a cached task only when the index says so).
			if _, _, err := signal.world.router.Task(ctx, "examples", "shop", id); !errors.Is(err, tool.ErrNotFound) {
				t.Errorf("the task afterwards: %v, want it closed", err)
			}
		})
	}
}
