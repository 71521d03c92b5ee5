package temporaltool

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	tool "github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/store/postgres"
)

// The agent of the tests on a dev server: a workflow whose model is a script (fakeLLM), its tool calls Invoke
// activities, its waits Events.Next. It is the loop a host writes, and the workflow of the recorded histories.

// Turn is one scripted model turn: tool calls, a wait for an event, or the answer.
type Turn struct {
	Calls   []ToolCall `json:"calls,omitempty"`
	WaitFor string     `json:"wait_for,omitempty"`
	Answer  string     `json:"answer,omitempty"`
}

// ToolCall is one function call of the model.
type ToolCall struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// Message is one entry of the transcript the model reads.
type Message struct {
	Role string `json:"role"`
	Text string `json:"text"`
}

// AgentInput is the agent workflow's input.
type AgentInput struct {
	Task   TaskRef `json:"task"`
	Script []Turn  `json:"script"`
	// WaitTimeout replaces the event's timeout, so that a test need not wait the manifest's minute.
	WaitTimeout      time.Duration `json:"wait_timeout,omitempty"`
	HeartbeatTimeout time.Duration `json:"heartbeat_timeout,omitempty"`
}

// AgentResult is what the conversation came to.
type AgentResult struct {
	Transcript []Message `json:"transcript"`
	Outcomes   []Outcome `json:"outcomes"`
	Answer     string    `json:"answer"`
	Ended      bool      `json:"ended,omitempty"`
}

const (
	agentWorkflowName = "shop_agent"
	fakeLLMName       = "fake_llm"
	noopName          = "noop"
)

func agentWorkflow(ctx workflow.Context, in AgentInput) (AgentResult, error) {
	var r AgentResult
	o := DefaultActivityOptions()
	if in.HeartbeatTimeout > 0 {
		o.HeartbeatTimeout = in.HeartbeatTimeout
	}
	ctx = workflow.WithActivityOptions(ctx, o)
	info, err := Start(ctx, StartInput{Task: in.Task, ExpiresAt: workflow.Now(ctx).Add(24 * time.Hour)})
	if err != nil {
		return r, err
	}
	defer Close(ctx, in.Task)
	events := NewEvents(ctx)
	llm := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second})
	for turn := 0; ; turn++ {
		var t Turn
		if err := workflow.ExecuteActivity(llm, fakeLLMName, in.Script, turn, r.Transcript).Get(ctx, &t); err != nil {
			return r, err
		}
		if t.Answer != "" {
			r.Answer = t.Answer
			return r, nil
		}
		if t.WaitFor != "" {
			timeout := info.EventTimeouts[t.WaitFor]
			if in.WaitTimeout > 0 {
				timeout = in.WaitTimeout
			}
			msg := fmt.Sprintf("no %s within %v", t.WaitFor, timeout)
			if a, ok := events.Next(ctx, timeout); ok {
				msg = a.Message
			}
			r.Transcript = append(r.Transcript, Message{Role: "event", Text: msg})
		}
		for i, c := range t.Calls {
			out, err := Invoke(ctx, Call{Task: in.Task, CallID: fmt.Sprintf("%s-%d-%d", in.Task.ID, turn, i),
				Function: c.Name, Args: c.Args})
			if Ended(err) {
				r.Ended, r.Answer = true, "Sorry, the shop is not working right now."
				return r, nil // the deferred Close runs
			}
			if err != nil {
				return r, err
			}
			r.Outcomes = append(r.Outcomes, out)
			r.Transcript = append(r.Transcript, Message{Role: "tool", Text: out.Text})
		}
	}
}

// fakeLLM answers turn turn of the script; past its end, "done".
func fakeLLM(_ context.Context, script []Turn, turn int, _ []Message) (Turn, error) {
	if turn >= len(script) {
		return Turn{Answer: "done"}, nil
	}
	return script[turn], nil
}

// noop is the baseline of the cost benchmark: an activity with Invoke's input and output that does nothing.
func noop(_ context.Context, c Call) (Outcome, error) {
	return Outcome{V: Version, CallID: c.CallID, Function: c.Function, Text: `{"total":3}`}, nil
}

// workerConfig configures a worker of the tests, in this process or a helper process.
type workerConfig struct {
	TemporalAddr string `json:"temporal_addr"`
	TaskQueue    string `json:"task_queue"`
	DSN          string `json:"dsn,omitempty"` // "": a memory store
	ShopURL      string `json:"shop_url"`
	DeadURL      string `json:"dead_url"`
	ReplicaID    string `json:"replica_id"`
	// Temporal runs the Temporal worker (activities, workflows); without it the process only takes webhooks.
	Temporal bool `json:"temporal"`
	// LostReplyEvery makes the Sink return an error after signalling every n-th activation, as a lost reply
	// would: the webhook is answered 503 and its retry signals again.
	LostReplyEvery int `json:"lost_reply_every,omitempty"`
	// Sink replaces the SignalSink's options (in this process only).
	Sink *SinkOptions `json:"-"`
}

// runningWorker is a worker of the tests: its world, its webhook endpoint, its Temporal client and worker.
type runningWorker struct {
	world   *world
	webhook string // the URL of the Router's endpoint for the shop
	client  client.Client
	worker  worker.Worker
	srv     *http.Server
	store   interface{ Close() error }
}

// quietLogger keeps the SDK's log out of the test output.
var quietLogger = sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))

func startWorker(ctx context.Context, cfg workerConfig) (*runningWorker, error) {
	rw := &runningWorker{}
	var st tool.Store
	if cfg.DSN != "" {
		pg, err := postgres.Open(ctx, cfg.DSN)
		if err != nil {
			return nil, err
		}
		st, rw.store = pg, pg
	}
	c, err := client.Dial(client.Options{HostPort: cfg.TemporalAddr, Logger: quietLogger})
	if err != nil {
		return nil, err
	}
	rw.client = c
	var opts SinkOptions
	if cfg.Sink != nil {
		opts = *cfg.Sink
	}
	var sink tool.Sink = SignalSink(c, opts)
	if n := cfg.LostReplyEvery; n > 0 {
		sink = lostReplies(sink, n)
	}
	w, err := openWorld(ctx, worldOptions{store: st, shopURL: cfg.ShopURL, deadURL: cfg.DeadURL,
		replicaID: cfg.ReplicaID, sink: sink})
	if err != nil {
		c.Close()
		return nil, err
	}
	rw.world = w
	mux := http.NewServeMux()
	w.router.Register(mux)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	rw.webhook = "http://" + l.Addr().String() + "/v1/webhooks/events/examples/shop"
	rw.srv = &http.Server{Handler: mux}
	go rw.srv.Serve(l)
	if cfg.Temporal {
		rw.worker = worker.New(c, cfg.TaskQueue, worker.Options{
			// One worker restarted after a kill: its workflow tasks wait on the dead worker's sticky queue for
			// this long before going to the normal queue (the SDK's default is 5 s).
			StickyScheduleToStartTimeout: time.Second,
		})
		Register(rw.worker, w.acts)
		rw.worker.RegisterWorkflowWithOptions(agentWorkflow, workflow.RegisterOptions{Name: agentWorkflowName})
		rw.worker.RegisterWorkflowWithOptions(collectWorkflow, workflow.RegisterOptions{Name: collectWorkflowName})
		rw.worker.RegisterWorkflowWithOptions(roundTripWorkflow, workflow.RegisterOptions{Name: roundTripWorkflowName})
		rw.worker.RegisterWorkflowWithOptions(cancelWorkflow, workflow.RegisterOptions{Name: cancelWorkflowName})
		rw.worker.RegisterWorkflowWithOptions(wakeWorkflow, workflow.RegisterOptions{Name: wakeWorkflowName})
		rw.worker.RegisterActivityWithOptions(fakeLLM, activity.RegisterOptions{Name: fakeLLMName})
		rw.worker.RegisterActivityWithOptions(noop, activity.RegisterOptions{Name: noopName})
		if err := rw.worker.Start(); err != nil {
			rw.close()
			return nil, err
		}
	}
	return rw, nil
}

func (rw *runningWorker) close() {
	if rw.worker != nil {
		rw.worker.Stop()
	}
	if rw.srv != nil {
		rw.srv.Close()
	}
	if rw.world != nil {
		rw.world.router.Close(context.Background())
	}
	rw.client.Close()
	if rw.store != nil {
		rw.store.Close()
	}
}

// lostReplies wraps sink so that every n-th activation is signalled and then refused, as a reply lost on the
// way back from the Temporal server would be.
func lostReplies(sink tool.Sink, n int) tool.Sink {
	var count atomic.Int64
	return tool.SinkFunc(func(ctx context.Context, a tool.Activation) error {
		if err := sink.Accept(ctx, a); err != nil {
			return err
		}
		if count.Add(1)%int64(n) == 0 {
			return fmt.Errorf("the reply of the signal of %s was lost", a.ID)
		}
		return nil
	})
}

// The helper process: the test binary re-executed with TEMPORALTOOL_WORKER set to a workerConfig runs that
// worker until it is killed, after printing "ready <webhook URL>".
func TestMain(m *testing.M) {
	if spec := os.Getenv("TEMPORALTOOL_WORKER"); spec != "" {
		os.Exit(helperWorker(spec))
	}
	os.Exit(m.Run())
}

func helperWorker(spec string) int {
	var cfg workerConfig
	if err := json.Unmarshal([]byte(spec), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	rw, err := startWorker(context.Background(), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	fmt.Println("ready", rw.webhook)
	// Stay until killed, or until the parent closes stdin.
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	rw.close()
	return 0
}

const collectWorkflowName = "collect"

// CollectInput is the input of collectWorkflow.
type CollectInput struct {
	Task    TaskRef       `json:"task"`
	Ref     string        `json:"ref"`  // the order placed first, which the webhooks name
	Want    int           `json:"want"` // activations to take
	Timeout time.Duration `json:"timeout"`
}

// CollectResult is what collectWorkflow took.
type CollectResult struct {
	IDs      []string `json:"ids"`
	TimedOut bool     `json:"timed_out,omitempty"`
}

// collectWorkflow places an order (its ref grows the task's allow list), then takes activations until it has
// in.Want of them or in.Timeout passes without one.
func collectWorkflow(ctx workflow.Context, in CollectInput) (CollectResult, error) {
	var r CollectResult
	ctx = workflow.WithActivityOptions(ctx, DefaultActivityOptions())
	if _, err := Start(ctx, StartInput{Task: in.Task}); err != nil {
		return r, err
	}
	defer Close(ctx, in.Task)
	args, _ := json.Marshal(map[string]string{"ref": in.Ref, "item": "tea"})
	if _, err := Invoke(ctx, Call{Task: in.Task, CallID: in.Task.ID + "-grow", Function: "shop_place_order",
		Args: args}); err != nil {
		return r, err
	}
	events := NewEvents(ctx)
	for len(r.IDs) < in.Want {
		a, ok := events.Next(ctx, in.Timeout)
		if !ok {
			r.TimedOut = true
			break
		}
		r.IDs = append(r.IDs, a.ID)
	}
	return r, nil
}

const cancelWorkflowName = "cancel_call"

// cancelWorkflow starts c and cancels it when the signal "cancel" comes; it returns the call's error.
func cancelWorkflow(ctx workflow.Context, c Call) (string, error) {
	o := DefaultActivityOptions()
	o.HeartbeatTimeout = 3 * time.Second
	o.WaitForCancellation = true
	ctx = workflow.WithActivityOptions(ctx, o)
	if _, err := Start(ctx, StartInput{Task: c.Task}); err != nil {
		return "", err
	}
	defer Close(ctx, c.Task)
	callCtx, cancel := workflow.WithCancel(ctx)
	f := workflow.ExecuteActivity(callCtx, ActivityInvoke, c)
	workflow.Go(ctx, func(ctx workflow.Context) {
		workflow.GetSignalChannel(ctx, "cancel").Receive(ctx, nil)
		cancel()
	})
	err := f.Get(ctx, nil)
	if err == nil {
		return "completed", nil
	}
	return err.Error(), nil
}

const wakeWorkflowName = "wake"

// wakeWorkflow is what a SignalWithStart Sink starts for an activation of a task whose conversation is not
// running: it lends the stored task (MustExist: never a fresh one), takes the activation and closes the task.
func wakeWorkflow(ctx workflow.Context, task TaskRef) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, DefaultActivityOptions())
	if _, err := Start(ctx, StartInput{Task: task, MustExist: true}); err != nil {
		return "", err
	}
	defer Close(ctx, task)
	a, ok := NewEvents(ctx).Next(ctx, time.Minute)
	if !ok {
		return "", errors.New("no activation")
	}
	return a.Message, nil
}
