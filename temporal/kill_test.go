package temporaltool

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/commonagents-go/tool/tooltest"
)

// TestWorkerKillMidCall SIGKILLs the worker process running a call, twice per run, as soon as its request has
// reached the shop: a non-idempotent POST (place_order, held 4 s by the shop), then an idempotent GET (get_order,
// its first request held).
// With one worker the killed one is started again at once; with two, the other takes the retry and the killed
// one is started again too. Then a webhook wakes the conversation. In every run the POST reaches the shop once,
// the model sees outcome_unknown or the real result (never a second order), the GET's retry succeeds, and the
// workflow finishes. Workers are helper processes (this test binary re-executed) over PostgreSQL.
//
// TOOL_TEMPORAL_KILL_RUNS sets the runs per worker count: 1 by default (CI), 20 for the measurement:
//
//	TOOL_TEMPORAL_KILL_RUNS=20 go test -run TestWorkerKillMidCall -v -timeout 60m
func TestWorkerKillMidCall(t *testing.T) {
	dsn, addr := postgresDSN(t), temporalAddr(t)
	runs := 1
	if v := os.Getenv("TOOL_TEMPORAL_KILL_RUNS"); v != "" {
		runs, _ = strconv.Atoi(v)
	}
	c := dial(t)
	s := newShop(t)
	for _, workers := range []int{1, 2} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			for i := range runs {
				killRun(t, c, s, dsn, addr, workers, i)
			}
		})
	}
}

func killRun(t *testing.T, c client.Client, s *shop, dsn, addr string, workers, run int) {
	queue, id := "kill-"+nonce(), "acme-kill-"+nonce()
	orderRef := "o-" + nonce()
	procs := &helperWorkers{t: t, cfg: workerConfig{TemporalAddr: addr, TaskQueue: queue, DSN: dsn, Temporal: true},
		shop: s.URL}
	defer procs.stopAll()
	for k := 1; k <= workers; k++ {
		procs.start(k)
	}
	args := func(v string) json.RawMessage { return json.RawMessage(v) }
	in := AgentInput{Task: ref(id), HeartbeatTimeout: 3 * time.Second, Script: []Turn{
		{Calls: []ToolCall{{Name: "shop_place_order", Args: args(fmt.Sprintf(`{"ref":%q,"item":"tea","delay_ms":4000}`, orderRef))}}},
		{Calls: []ToolCall{{Name: "shop_get_order", Args: args(fmt.Sprintf(`{"ref":%q,"delay_ms":60000}`, orderRef))}}},
		{WaitFor: "order_shipped"},
		{Answer: "ordered"},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	wr, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, agentWorkflowName, in)
	if err != nil {
		t.Fatal(err)
	}
	killed := time.Time{}
	for _, key := range []string{"POST /orders " + orderRef, "GET /orders " + orderRef} {
		select {
		case <-s.arrival(key):
		case <-ctx.Done():
			t.Fatalf("run %d: %s never reached the shop", run, key)
		}
		k := procs.kill(s.sender(key)) // mid-call: the request is at the shop, which holds it
		if killed.IsZero() {
			killed = time.Now()
		}
		procs.start(k)
	}
	// The allow list holds the ref (written before the POST was sent): the webhook reaches the task.
	body := fmt.Appendf(nil, `{"account":"acme","ref":%q,"n":1}`, orderRef)
	hook := tooltest.Signer{Secret: testWebhookSecret}.GitHub(body, id+"-shipped")
	if status := post(t, procs.webhook(), hook); status != 202 {
		t.Fatalf("run %d: webhook: %d", run, status)
	}
	var r AgentResult
	if err := wr.Get(ctx, &r); err != nil {
		t.Fatalf("run %d: workflow: %v", run, err)
	}
	posts := s.count("POST /orders " + orderRef)
	if posts != 1 {
		t.Errorf("run %d: the POST reached the shop %d times", run, posts)
	}
	if r.Answer != "ordered" || len(r.Outcomes) != 2 {
		t.Fatalf("run %d: result %+v", run, r)
	}
	order, get := r.Outcomes[0], r.Outcomes[1]
	seen := "result"
	switch {
	case order.Error != nil && order.Error.OutcomeUnknown:
		seen = "outcome_unknown"
	case !order.IsError && strings.Contains(order.Text, `"order_no":1`):
	default:
		t.Errorf("run %d: the model saw %s", run, order.Text)
	}
	if get.IsError || get.Attempt < 2 || !strings.Contains(get.Text, `"orders":1`) {
		t.Errorf("run %d: get_order %+v: want attempt 2's success with 1 order", run, get)
	}
	woke := strings.Contains(r.Transcript[len(r.Transcript)-1].Text, "shipped")
	if !woke {
		t.Errorf("run %d: the webhook did not wake the conversation: %v", run, r.Transcript)
	}
	t.Logf("| %d | %d | POST sent %d | place_order: %s (attempt %d) | get_order: attempt %d ok | woke %v | first kill → end %.1f s | total %.1f s |",
		workers, run+1, posts, seen, order.Attempt, get.Attempt, woke, time.Since(killed).Seconds(), time.Since(start).Seconds())
	if *updateHistories && run == 0 {
		if err := os.WriteFile(fmt.Sprintf("testdata/histories/kill-%d-workers.json", workers),
			historyJSON(t, history(t, c, id)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if n := secretsIn(t, history(t, c, id)); n != 0 {
		t.Errorf("run %d: the history holds a secret setting %d times", run, n)
	}
}

// helperWorkers are the worker processes of a kill run, numbered from 1; worker k reaches the shop under /wk.
type helperWorkers struct {
	t    *testing.T
	cfg  workerConfig
	shop string
	mu   sync.Mutex
	cmds map[int]*exec.Cmd
	hook map[int]string
}

// start starts worker k and waits until it is ready.
func (h *helperWorkers) start(k int) {
	h.t.Helper()
	cfg := h.cfg
	cfg.ShopURL, cfg.ReplicaID = fmt.Sprintf("%s/w%d", h.shop, k), fmt.Sprintf("w%d", k)
	spec, _ := json.Marshal(cfg)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "TEMPORALTOOL_WORKER="+string(spec))
	cmd.Stderr = os.Stderr
	if _, err := cmd.StdinPipe(); err != nil { // held open: the worker stops when it closes
		h.t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		h.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "ready ")
	if err != nil || !ok {
		cmd.Process.Kill()
		cmd.Wait()
		h.t.Fatalf("worker %d did not start: %q %v", k, line, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cmds == nil {
		h.cmds, h.hook = map[int]*exec.Cmd{}, map[int]string{}
	}
	h.cmds[k], h.hook[k] = cmd, url
}

// kill SIGKILLs the worker named name ("w1", ...) and returns its number.
func (h *helperWorkers) kill(name string) int {
	h.t.Helper()
	k, err := strconv.Atoi(strings.TrimPrefix(name, "w"))
	h.mu.Lock()
	cmd := h.cmds[k]
	delete(h.cmds, k)
	delete(h.hook, k)
	h.mu.Unlock()
	if err != nil || cmd == nil {
		h.t.Fatalf("no worker %q to kill", name)
	}
	cmd.Process.Kill() // SIGKILL
	cmd.Wait()
	return k
}

// webhook is the webhook URL of a running worker.
func (h *helperWorkers) webhook() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, url := range h.hook {
		return url
	}
	return ""
}

func (h *helperWorkers) stopAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for k, cmd := range h.cmds {
		cmd.Process.Kill()
		cmd.Wait()
		delete(h.cmds, k)
	}
}
