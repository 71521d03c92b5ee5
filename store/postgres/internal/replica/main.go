// Command replica is a host process for the durable-state tests of store/postgres: it runs one task of a
// manifest over a PostgreSQL Store until it is killed, or until its standard input closes, when it closes (or
// detaches) the task. It writes one JSON object per line: {"ready": true} once the task runs, {"activation": ...}
// for each activation, {"fact": {"name": ..., "data": ...}} for each poll, subscription and store.failed fact,
// {"result": ...} for each -invoke, {"ended": "..."} at the end.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/store/postgres"
)

type invokes []string

func (i *invokes) String() string     { return strings.Join(*i, ",") }
func (i *invokes) Set(v string) error { *i = append(*i, v); return nil }

func main() {
	var (
		dsn      = flag.String("dsn", "", "PostgreSQL DSN")
		schema   = flag.String("schema", "", "schema of the Store")
		manifest = flag.String("manifest", "", "manifest file")
		settings = flag.String("settings", "{}", "settings, JSON")
		bindings = flag.String("bindings", "{}", "bindings, JSON")
		taskID   = flag.String("task", "", "task id")
		resume   = flag.Bool("resume", false, "resume the stored task instead of starting it")
		replica  = flag.String("replica", "", "replica id")
		end      = flag.String("end", "close", "what stdin's end does: close or detach")
		timeout  = flag.Duration("call-timeout", 2*time.Second, "Limits.CallTimeout (a poll's lease lasts two intervals and this)")
		calls    invokes
	)
	flag.Var(&calls, "invoke", "ACTION=ARGS_JSON to invoke once the task runs (repeatable)")
	flag.Parse()
	out := &printer{w: bufio.NewWriter(os.Stdout)}
	if err := run(out, *dsn, *schema, *manifest, *settings, *bindings, *taskID, *resume, *replica, *end, *timeout, calls); err != nil {
		out.print(map[string]any{"error": err.Error()})
		os.Exit(1)
	}
}

func run(out *printer, dsn, schema, manifest, settingsJSON, bindingsJSON, taskID string, resume bool, replica, end string,
	callTimeout time.Duration, calls []string) error {
	ctx := context.Background()
	var settings, bindings map[string]any
	if err := json.Unmarshal([]byte(settingsJSON), &settings); err != nil {
		return err
	}
	if err := json.Unmarshal([]byte(bindingsJSON), &bindings); err != nil {
		return err
	}
	store, err := postgres.Open(ctx, dsn, postgres.WithSchema(schema))
	if err != nil {
		return err
	}
	defer store.Close()
	facts := tool.ObserverFunc(func(_ context.Context, f tool.Fact) {
		if strings.HasPrefix(f.Name, "poll.") || strings.HasPrefix(f.Name, "subscription.") || f.Name == "store.failed" {
			out.print(map[string]any{"fact": map[string]any{"name": f.Name, "data": f.Data}})
		}
	})
	t, err := tool.LoadFile(ctx, manifest, tool.WithStore(store), tool.WithSettings(settings), tool.WithObserver(facts),
		tool.WithReplicaID(replica), tool.WithRuntimeInfo(tool.RuntimeInfo{Version: replica}),
		tool.WithLimits(tool.Limits{CallTimeout: callTimeout, TeardownTimeout: 3 * time.Second}))
	if err != nil {
		return err
	}
	cfg := tool.TaskConfig{ID: taskID, Capability: tool.Capability{Bindings: bindings},
		Sink: tool.SinkFunc(func(_ context.Context, a tool.Activation) error {
			out.print(map[string]any{"activation": a})
			return nil
		})}
	start := t.NewTask
	if resume {
		start = t.RestoreTask
	}
	task, err := start(context.WithoutCancel(ctx), cfg)
	if err != nil {
		return err
	}
	out.print(map[string]any{"ready": true})
	for _, c := range calls {
		action, args, _ := strings.Cut(c, "=")
		var a map[string]any
		if err := json.Unmarshal([]byte(args), &a); err != nil {
			return err
		}
		res, err := task.Invoke(ctx, action, a)
		if err != nil {
			return err
		}
		out.print(map[string]any{"result": res.Output, "error": res.Error})
	}
	_, _ = io.Copy(io.Discard, os.Stdin) // until the test closes stdin (or kills the process)
	if end == "detach" {
		err = task.Detach(ctx)
	} else {
		err = task.Close(ctx)
	}
	out.print(map[string]any{"ended": fmt.Sprint(err)})
	return nil
}

// printer writes JSON lines, one at a time.
type printer struct {
	mu sync.Mutex
	w  *bufio.Writer
}

func (p *printer) print(v any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b, _ := json.Marshal(v)
	p.w.Write(append(b, '\n'))
	p.w.Flush()
}
