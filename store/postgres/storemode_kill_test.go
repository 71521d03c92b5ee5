package postgres_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/store/postgres"
)

// The fault test of store mode (issue 28, docs/guarantees.md): three replica processes of the test binary over
// one PostgreSQL, each a Router in store mode; one grows allow lists, the others take the webhooks for the values
// it added; replicas are killed with SIGKILL at random points; the sender retries on anything but 2xx.

// fanManifest: a task follows people; a webhook names a team (the task's binding) and a login (a followed one).
const fanManifest = `kind: commonagents.info/v1beta2/tool
namespace: tests
name: fanin
description: Tasks woken for the people they follow.
parameters:
  properties:
    team: {type: string, require_binding: true}
    login: {type: string}
actions:
  - name: follow
    description: Follows someone.
    parameters:
      properties:
        login: {type: string}
    execute:
      cel:
        expression: "input.login"
events:
  - name: mentioned
    description: Someone the task follows was mentioned.
    message: "{event.payload.login}"
    receive:
      webhook:
        filter: "event.payload.team == parameters.team && event.payload.login == parameters.login"
`

// storeReplicaEnv marks the helper process; its value is "schema replica-id".
const storeReplicaEnv = "TOOL_STORE_REPLICA"

// TestStoreModeReplicaProcess is the replica process of TestStoreModeKillAtRandomPoints, not a test.
func TestStoreModeReplicaProcess(t *testing.T) {
	v := os.Getenv(storeReplicaEnv)
	if v == "" {
		t.Skip("the replica process of TestStoreModeKillAtRandomPoints")
	}
	schema, replica, _ := strings.Cut(v, " ")
	if err := runStoreReplica(dsn(t), schema, replica); err != nil {
		printLine(map[string]any{"error": err.Error()})
		os.Exit(1)
	}
	os.Exit(0)
}

var printMu sync.Mutex

// printLine writes one JSON line to standard output, unbuffered: what it printed before a SIGKILL is read.
func printLine(v any) {
	b, _ := json.Marshal(v)
	printMu.Lock()
	defer printMu.Unlock()
	os.Stdout.Write(append(b, '\n'))
}

// runStoreReplica serves the webhooks of fanManifest in store mode on a port it prints ({"addr": ...}), prints
// {"activation": ...} as its Sink accepts, and grows allow lists on its standard input's "grow <task> <login>"
// lines, printing {"grown": "<task> <login>"} once the call returned. When its standard input ends it shuts down
// as a replica should: it stops listening, closes its Router (which detaches the tasks its cache holds), prints
// {"closed": "<Router.Close's error>"} and closes the Store.
func runStoreReplica(dsn, schema, replica string) error {
	ctx := context.Background()
	st, err := postgres.Open(ctx, dsn, postgres.WithSchema(schema))
	if err != nil {
		return err
	}
	defer st.Close()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	var rngMu sync.Mutex
	sink := tool.SinkFunc(func(_ context.Context, a tool.Activation) error {
		printLine(map[string]any{"activation": map[string]string{"id": a.ID, "task": a.TaskID, "delivery": a.DeliveryID}})
		rngMu.Lock()
		d := time.Duration(rng.Int64N(int64(3 * time.Millisecond)))
		rngMu.Unlock()
		time.Sleep(d) // a window for a kill inside the Sink, after it printed and before it accepted
		return nil
	})
	tl, err := tool.Load(ctx, []byte(fanManifest), tool.WithStore(st), tool.WithRouteIndex(), tool.WithReplicaID(replica),
		tool.WithLimits(tool.Limits{ClaimTimeout: time.Second}))
	if err != nil {
		return err
	}
	cfg := func(id string) tool.TaskConfig {
		return tool.TaskConfig{ID: id, Capability: tool.Capability{Bindings: map[string]any{"team": id}}, Sink: sink}
	}
	r := tool.NewRouter(tool.RouterOptions{})
	if err := r.Serve(ctx, tl, func(_ context.Context, id string) (tool.TaskConfig, bool) { return cfg(id), true }); err != nil {
		return err
	}
	mux := http.NewServeMux()
	r.Register(mux)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go http.Serve(ln, mux)
	printLine(map[string]any{"addr": ln.Addr().String()})
	tasks := map[string]*tool.Task{}
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[0] != "grow" {
			continue
		}
		task := tasks[f[1]]
		if task == nil {
			if task, err = tl.RestoreTask(ctx, cfg(f[1])); err != nil {
				printLine(map[string]any{"grow_failed": err.Error()})
				continue
			}
			tasks[f[1]] = task
		}
		res, err := task.Invoke(ctx, "follow", map[string]any{"login": f[2]})
		if err != nil || res.IsError {
			printLine(map[string]any{"grow_failed": fmt.Sprint(err, res)})
			continue
		}
		printLine(map[string]any{"grown": f[1] + " " + f[2]})
	}
	ln.Close()
	for _, task := range tasks {
		_ = task.Detach(ctx)
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	printLine(map[string]any{"closed": fmt.Sprint(r.Close(cctx))})
	return nil
}

// storeProc is one running replica process.
type storeProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	addr  string
	lines chan map[string]any // grown and grow_failed lines
	done  chan struct{}       // closed when its output ended

	mu          sync.Mutex
	activations []map[string]string
	killOnce    sync.Once
}

func startStoreProc(t testing.TB, schema, replica string) *storeProc {
	t.Helper()
	return startReplicaProc(t, "TestStoreModeReplicaProcess", storeReplicaEnv+"="+schema+" "+replica, replica)
}

// startReplicaProc starts the test binary as the helper process run (a TestXxxProcess), with env added to its
// environment, and waits for the address it serves on.
func startReplicaProc(t testing.TB, run, env, replica string) *storeProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+run+"$")
	cmd.Env = append(os.Environ(), env)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &storeProc{cmd: cmd, stdin: stdin, lines: make(chan map[string]any, 16), done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var line map[string]any
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				continue
			}
			switch {
			case line["addr"] != nil:
				addr <- line["addr"].(string)
			case line["activation"] != nil:
				a := map[string]string{}
				for k, v := range line["activation"].(map[string]any) {
					a[k], _ = v.(string)
				}
				p.mu.Lock()
				p.activations = append(p.activations, a)
				p.mu.Unlock()
			case line["error"] != nil:
				t.Errorf("replica %s: %v", replica, line["error"])
			default:
				p.lines <- line
			}
		}
	}()
	t.Cleanup(p.kill)
	select {
	case p.addr = <-addr:
	case <-p.done:
		t.Fatalf("replica %s ended before it served", replica)
	}
	return p
}

// kill ends the process with SIGKILL and waits for its output to end.
func (p *storeProc) kill() {
	p.killOnce.Do(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		_ = p.cmd.Wait()
	})
	<-p.done
}

// shutdown closes the process's standard input, which shuts it down (runStoreReplica), and fails t unless its
// Router closed without error.
func (p *storeProc) shutdown(t testing.TB) {
	t.Helper()
	p.stdin.Close()
	for {
		select {
		case line := <-p.lines:
			if closed, ok := line["closed"]; ok {
				if closed != "<nil>" {
					t.Errorf("Router.Close at shutdown: %v", closed)
				}
				<-p.done
				_ = p.cmd.Wait()
				return
			}
		case <-p.done:
			t.Errorf("the replica ended without closing its Router")
			return
		}
	}
}

// alive reports whether the process still runs.
func (p *storeProc) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// grow asks the process to add login to task's allow list; false when the process died first or the call failed.
func (p *storeProc) grow(task, login string) bool {
	if _, err := fmt.Fprintf(p.stdin, "grow %s %s\n", task, login); err != nil {
		return false
	}
	select {
	case line := <-p.lines:
		return line["grown"] == task+" "+login
	case <-p.done:
		return false
	}
}

// post sends one webhook; the status, or 0 when no answer came.
func post(addr, delivery string, body []byte) int {
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/webhooks/events"+"/tests/fanin", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Delivery", delivery)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// storeKillSteps is how many growths and webhooks TestStoreModeKillAtRandomPoints sends: TOOL_STORE_KILL_STEPS,
// else 12 under -short, else 40.
func storeKillSteps(t *testing.T) int { return envCount(t, "TOOL_STORE_KILL_STEPS", 12, 40) }

// TestStoreModeKillAtRandomPoints: replica 0 grows a task's allow list, then a webhook for the new value goes to
// replica 1 or 2, which may hold an older copy of the task, or none. Replicas are killed with SIGKILL at random
// moments while webhooks are in flight (after the lookup, mid-scan, after the claim, inside the Sink) and while
// replica 0 grows; a killed replica is started again. The sender retries at a random live replica until it gets
// a 2xx. Every acknowledged delivery reached the Sink of its task, and the activations of one delivery at one
// task share one Activation.ID.
func TestStoreModeKillAtRandomPoints(t *testing.T) {
	dsn(t)
	schema := newSchema(t)
	seed := time.Now().UnixNano()
	if s := os.Getenv("TOOL_STORE_KILL_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	t.Logf("seed %d (TOOL_STORE_KILL_SEED)", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 4))
	ctx := context.Background()
	st := open(t, schema)
	tl, err := tool.Load(ctx, []byte(fanManifest), tool.WithStore(st), tool.WithRouteIndex())
	if err != nil {
		t.Fatal(err)
	}
	const nTasks = 6
	for i := range nTasks {
		id := "t" + strconv.Itoa(i)
		storeTask(t, tl, tool.TaskConfig{ID: id, Capability: tool.Capability{Bindings: map[string]any{"team": id}}})
	}
	if _, err := tl.ReindexRoutes(ctx); err != nil {
		t.Fatal(err)
	}
	var all []*storeProc // every process started, dead or alive, for their activations
	procs := make([]*storeProc, 3)
	live := func(i int) *storeProc {
		if procs[i] == nil || !procs[i].alive() {
			procs[i] = startStoreProc(t, schema, "r"+strconv.Itoa(i))
			all = append(all, procs[i])
		}
		return procs[i]
	}
	acked := map[string]string{} // delivery → task
	kills, retries := 0, 0
	for step := range storeKillSteps(t) {
		task, login := "t"+strconv.Itoa(rng.IntN(nTasks)), "u"+strconv.Itoa(step)
		for attempt := 0; ; attempt++ {
			if attempt == 20 {
				t.Fatalf("step %d: replica 0 could not grow %s in 20 attempts", step, task)
			}
			g := live(0)
			if rng.IntN(8) == 0 {
				kills++
				go func(d time.Duration) { time.Sleep(d); g.kill() }(time.Duration(rng.Int64N(int64(5 * time.Millisecond))))
			}
			if g.grow(task, login) {
				break
			}
		}
		delivery := "d" + strconv.Itoa(step)
		body, _ := json.Marshal(map[string]string{"team": task, "login": login})
		deadline := time.Now().Add(60 * time.Second)
		for {
			p := live(1 + rng.IntN(2))
			var killed sync.WaitGroup
			if rng.IntN(3) == 0 {
				kills++
				killed.Go(func() {
					time.Sleep(time.Duration(rng.Int64N(int64(3 * time.Millisecond)))) // the random point
					p.kill()
				})
			}
			status := post(p.addr, delivery, body)
			killed.Wait()
			if status/100 == 2 {
				acked[delivery] = task
				break
			}
			retries++
			if time.Now().After(deadline) {
				t.Fatalf("step %d: delivery %s not acknowledged within 60 s (last status %d)", step, delivery, status)
			}
			time.Sleep(20 * time.Millisecond) // the sender's back-off, not a wait on the system under test
		}
	}
	for _, p := range procs {
		if p != nil && p.alive() {
			p.shutdown(t) // what a replica does when it is stopped, not killed: its cached tasks are detached
		}
	}
	ids := map[string]map[string]bool{} // task + delivery → Activation.IDs
	for _, p := range all {
		p.mu.Lock()
		for _, a := range p.activations {
			k := a["task"] + " " + a["delivery"]
			if ids[k] == nil {
				ids[k] = map[string]bool{}
			}
			ids[k][a["id"]] = true
		}
		p.mu.Unlock()
	}
	dups := 0
	for delivery, task := range acked {
		got := ids[task+" "+delivery]
		if len(got) == 0 {
			t.Errorf("delivery %s for task %s was acknowledged but never reached its Sink", delivery, task)
		}
		if len(got) > 1 {
			t.Errorf("delivery %s at task %s activated with %d Activation.IDs: %v", delivery, task, len(got), got)
		}
	}
	for _, p := range all {
		p.mu.Lock()
		dups += len(p.activations)
		p.mu.Unlock()
	}
	t.Logf("seed %d: %d deliveries acknowledged, %d processes, %d kills, %d sender retries, %d activations in all",
		seed, len(acked), len(all), kills, retries, dups)
}
