// Command temporal runs an agent loop as a durable Temporal workflow: the model (a fake, scripted by the
// transcript) orders tea through the tool's place_order, which runs as an activity on any worker; the shop's
// webhook wakes the conversation with a signal; the model answers. Against a dev server:
//
//	eval "$(scripts/temporal.sh start)" && (cd examples/temporal && go run .)
//
// or go run . -temporal host:port for a server of your own. One process plays every part: the shop (an HTTP
// server that ships each order a moment later, by webhook), the worker (tool activities, the workflow, the model
// activity) and the webhook endpoint (a Router in store mode over the memory store; give -postgres a DSN to run
// several such processes over one database).
package main

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	tool "github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/events/webhook"
	"github.com/commonagents-go/tool/store/postgres"
	temporaltool "github.com/commonagents-go/tool/temporal"
)

//go:embed shop.yaml
var manifest []byte

const (
	queue         = "tea-shop"
	apiKey        = "sk-tea-3b9f01d2" // secret settings: they stay on the worker, out of every history
	webhookSecret = "whsec-tea-8c2e7a"
)

// Message is one entry of the conversation; Turn is what the model says next.
type Message struct{ Role, Text string }
type Turn struct {
	Call    *temporaltool.Call // a function call, or
	WaitFor string             // an event to wait for, or
	Answer  string             // the answer
}

// Order is the conversation: a task ID and the user's request.
type Order struct {
	TaskID, Request string
}

// Agent is the workflow: the agent loop. It calls the workflow package and the temporaltool helpers only.
func Agent(ctx workflow.Context, in Order) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, temporaltool.DefaultActivityOptions())
	task := temporaltool.TaskRef{Namespace: "examples", Tool: "shop", ID: in.TaskID}
	info, err := temporaltool.Start(ctx, temporaltool.StartInput{Task: task,
		ExpiresAt: workflow.Now(ctx).Add(24 * time.Hour)}) // a terminated workflow's task is swept then
	if err != nil {
		return "", err
	}
	defer temporaltool.Close(ctx, task)
	events := temporaltool.NewEvents(ctx)
	msgs := []Message{{"user", in.Request}}
	model := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	for turn := 0; ; turn++ {
		var t Turn
		if err := workflow.ExecuteActivity(model, Model, info.Functions, msgs).Get(ctx, &t); err != nil {
			return "", err
		}
		switch {
		case t.Answer != "":
			return t.Answer, nil
		case t.WaitFor != "":
			// The tool's event timeout counts from the task's last activity; the model's turn was not one.
			if err := temporaltool.Touch(ctx, task); err != nil {
				return "", err
			}
			if a, ok := events.Next(ctx, info.EventTimeouts[t.WaitFor]); ok {
				msgs = append(msgs, Message{"event", a.Message})
			} else {
				msgs = append(msgs, Message{"event", "no " + t.WaitFor + " in time"})
			}
		case t.Call != nil:
			c := *t.Call
			c.Task, c.CallID = task, fmt.Sprintf("%s-%d", in.TaskID, turn)
			out, err := temporaltool.Invoke(ctx, c)
			if temporaltool.Ended(err) {
				return "Sorry, the shop is not working right now.", nil // the deferred Close runs
			} else if err != nil {
				return "", err
			}
			msgs = append(msgs, Message{"tool", out.Text})
		}
	}
}

// Model is the fake LLM, an activity: it reads the transcript and picks the next step.
func Model(_ context.Context, functions []temporaltool.FunctionInfo, msgs []Message) (Turn, error) {
	last := msgs[len(msgs)-1]
	switch last.Role {
	case "user":
		return Turn{Call: &temporaltool.Call{Function: functions[0].Name,
			Args: json.RawMessage(`{"ref":"tea-1","item":"sencha"}`)}}, nil
	case "tool":
		return Turn{WaitFor: "order_shipped"}, nil
	default:
		return Turn{Answer: "Done: " + last.Text}, nil
	}
}

func main() {
	addr := flag.String("temporal", os.Getenv("TOOL_TEST_TEMPORAL_ADDR"), "the Temporal frontend, host:port")
	dsn := flag.String("postgres", "", "a PostgreSQL DSN for the tasks' Store (default: the memory store)")
	flag.Parse()
	if *addr == "" {
		*addr = "127.0.0.1:7233"
	}
	if err := run(context.Background(), *addr, *dsn); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, addr, dsn string) error {
	quiet := sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	c, err := client.Dial(client.Options{HostPort: addr, Logger: quiet})
	if err != nil {
		return err
	}
	defer c.Close()

	// The webhook endpoint's listener first: the shop needs its URL.
	hooks, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	shopURL, err := serveShop("http://" + hooks.Addr().String() + "/v1/webhooks/events/examples/shop")
	if err != nil {
		return err
	}

	// The worker's tool, over a Store every worker shares, served in store mode: any worker lends any task.
	st := tool.NewMemoryStore()
	if dsn != "" {
		pg, err := postgres.Open(ctx, dsn)
		if err != nil {
			return err
		}
		defer pg.Close()
		st = pg
	}
	tl, err := tool.Load(ctx, manifest, tool.WithStore(st), tool.WithRouteIndex(),
		tool.WithSettings(map[string]any{"base_url": shopURL, "api_key": apiKey, "webhook_secret": webhookSecret}))
	if err != nil {
		return err
	}
	if _, err := tl.ReindexRoutes(ctx); err != nil {
		return err
	}
	sink := temporaltool.SignalSink(c, temporaltool.SinkOptions{})
	config := func(_ context.Context, ref temporaltool.TaskRef) (tool.TaskConfig, error) {
		// The host's record of the task: here every conversation belongs to the account "acme".
		return tool.TaskConfig{ID: ref.ID, Sink: sink,
			Capability: tool.Capability{Bindings: map[string]any{"account": "acme"}}}, nil
	}
	router := tool.NewRouter(tool.RouterOptions{})
	defer router.Close(context.Background())
	err = router.Serve(ctx, tl, func(ctx context.Context, id string) (tool.TaskConfig, bool) {
		cfg, err := config(ctx, temporaltool.TaskRef{ID: id})
		return cfg, err == nil
	})
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	router.Register(mux)
	go http.Serve(hooks, mux)

	w := worker.New(c, queue, worker.Options{})
	temporaltool.Register(w, &temporaltool.Activities{Router: router,
		Tools: map[string]*tool.Tool{"examples/shop": tl}, Config: config, MaxResultBytes: 64 << 10})
	w.RegisterWorkflow(Agent)
	w.RegisterActivity(Model)
	if err := w.Start(); err != nil {
		return err
	}
	defer w.Stop()

	id := fmt.Sprintf("tea-%d", time.Now().UnixNano())
	wr, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, Agent,
		Order{TaskID: id, Request: "Order me some sencha, and tell me when it ships."})
	if err != nil {
		return err
	}
	var answer string
	if err := wr.Get(ctx, &answer); err != nil {
		return err
	}
	fmt.Println("workflow", id+":", answer)
	return nil
}

// serveShop starts the fake shop and returns its URL: it takes orders and, a moment later, sends the
// order_shipped webhook, signed, to hookURL.
func serveShop(hookURL string) (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /orders", func(w http.ResponseWriter, r *http.Request) {
		var o struct{ Ref, Item, Account string }
		if err := json.NewDecoder(r.Body).Decode(&o); err != nil || r.Header.Get("X-Api-Key") != apiKey {
			http.Error(w, `{"message":"bad order"}`, http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, `{"order_no":1,"ref":%q}`, o.Ref)
		go ship(hookURL, o.Account, o.Ref)
	})
	go http.Serve(l, mux)
	return "http://" + l.Addr().String(), nil
}

// ship sends the order_shipped webhook, retrying until it is accepted, as a webhook sender does.
func ship(hookURL, account, ref string) {
	body := fmt.Appendf(nil, `{"account":%q,"ref":%q,"tracking":"TRK-42"}`, account, ref)
	for attempt := 1; ; attempt++ {
		time.Sleep(time.Second)
		req, _ := http.NewRequest(http.MethodPost, hookURL, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Delivery", "ship-"+ref)
		req.Header.Set("X-Hub-Signature-256", webhook.SignGitHub([]byte(webhookSecret), body))
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
			if res.StatusCode/100 == 2 {
				return
			}
		}
		if attempt == 10 {
			log.Printf("shop: the webhook for %s was refused: %v", ref, strings.TrimSpace(fmt.Sprint(err, res)))
			return
		}
	}
}
