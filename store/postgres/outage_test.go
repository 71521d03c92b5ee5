package postgres_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/store/postgres"
	"github.com/commonagents-go/tool/tooltest"
)

// privateServer starts a PostgreSQL server of the test's own with scripts/postgres.sh — a test that stops its
// database never stops the one other tests share — and returns its DSN and a function that runs the script's
// crash or restart on it. The server is removed when t ends.
func privateServer(t *testing.T) (string, func(cmd string)) {
	t.Helper()
	dsn(t) // skips (or fails in CI) where the PostgreSQL tests cannot run
	script, err := filepath.Abs("../../scripts/postgres.sh")
	if err != nil {
		t.Fatal(err)
	}
	env := filepath.Join(t.TempDir(), "env")
	start := exec.Command(script, "start", env)
	// Synchronous commits: an immediate stop must not lose what the store was told is written (with them off the
	// server loses its last commits, even the store's tables, and the test measures the server, not the store).
	start.Env = append(os.Environ(), "TOOL_POSTGRES_SYNCHRONOUS_COMMIT=on")
	if out, err := start.CombinedOutput(); err != nil {
		t.Fatalf("start a private PostgreSQL server: %v\n%s", err, out)
	}
	vars := readEnvFile(t, env)
	dir := vars["TOOL_TEST_POSTGRES_DIR"]
	t.Cleanup(func() { _ = exec.Command(script, "stop", dir).Run() })
	return vars["TOOL_TEST_POSTGRES_DSN"], func(cmd string) {
		t.Helper()
		if out, err := exec.Command(script, cmd, dir).CombinedOutput(); err != nil {
			t.Errorf("postgres.sh %s: %v\n%s", cmd, err, out)
		}
	}
}

// TestPollAcrossADatabaseOutage stops the database (pg_ctl stop -m immediate) right after the Sink accepted a
// polled item, before the poll could record it, while items keep arriving; then starts it again. Every item fires
// exactly once, and the host hears of the outage: poll.failed (reason store) and store.failed facts.
func TestPollAcrossADatabaseOutage(t *testing.T) {
	url, pg := privateServer(t)
	ctx := context.Background()
	store, err := postgres.Open(ctx, url, postgres.WithSchema("outage"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	p, srv := newPlatform(t)
	p.publish("base")
	obs := tooltest.NewObserver()
	tl, err := tool.Load(ctx, []byte(durable), tool.WithStore(store), tool.WithObserver(obs), tool.WithReplicaID("r1"),
		tool.WithSettings(map[string]any{"base_url": srv.URL}), tool.WithLimits(tool.Limits{CallTimeout: 300 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var fired []string
	crashed := make(chan struct{})
	sink := tool.SinkFunc(func(_ context.Context, a tool.Activation) error {
		if a.Event != "item" {
			return nil
		}
		id := a.Payload.(map[string]any)["id"].(string)
		if id == "crash" {
			pg("crash") // the Sink accepted; the poll's write of its state comes next, into the outage
			close(crashed)
		}
		mu.Lock()
		fired = append(fired, id)
		mu.Unlock()
		return nil
	})
	task, err := tl.NewTask(ctx, tool.TaskConfig{ID: "t1", Sink: sink,
		Capability: tool.Capability{Bindings: map[string]any{"feed": "f1"}}})
	if err != nil {
		t.Fatal(err)
	}
	obs.Wait(t, "poll.fetched", 1) // the baseline
	p.publish("a", "crash", "b")
	<-crashed
	p.publish("c") // mid-outage traffic
	// Each step of the outage is a poll.failed fact; two of them: the poll keeps trying, and does not fire again.
	waitFor(t, "two poll.failed (store) facts", func() bool {
		n := 0
		for _, f := range obs.Facts("poll.failed") {
			if f.Data["reason"] == "store" {
				n++
			}
		}
		return n >= 2
	})
	// A push during the outage is not lost: its delivery id cannot be claimed or recorded, so it activates (a
	// duplicate beats a loss), and the sender's retry after the outage activates again, with the same ID.
	push := &tool.Inbound{Event: "change", Body: []byte(`{"n":1}`), DeliveryID: "w-1"}
	during, err := task.Deliver(ctx, push)
	if err != nil || len(during.Activations) != 1 {
		t.Fatalf("push during the outage: %+v, %v; want activated", during, err)
	}
	pg("restart")
	p.publish("d")
	var after *tool.Delivery
	waitFor(t, "the push's retry to be taken", func() bool { // the pool reconnects on its own time
		after, err = task.Deliver(ctx, push)
		return err == nil && len(after.Activations)+len(after.Discarded) > 0
	})
	if len(after.Activations) != 1 || after.Activations[0].ID != during.Activations[0].ID {
		t.Errorf("retry after the outage: %+v; want activated again with ID %s", after, during.Activations[0].ID)
	}
	want := []string{"a", "b", "c", "crash", "d"}
	waitFor(t, "every item to fire", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return !slices.ContainsFunc(want, func(id string) bool { return !slices.Contains(fired, id) })
	})
	fetches := len(obs.Facts("poll.fetched"))
	obs.Wait(t, "poll.fetched", fetches+2) // two more polls: nothing may fire again
	if err := task.Close(ctx); err != nil {
		t.Errorf("Close after the outage: %v", err)
	}
	mu.Lock()
	got := slices.Sorted(slices.Values(fired))
	mu.Unlock()
	if !slices.Equal(got, want) {
		t.Errorf("items fired across the outage: %v, want %v once each", got, want)
	}
	for _, record := range []string{"receiver", "delivery_id"} {
		if !slices.ContainsFunc(obs.Facts("store.failed"), func(f tool.Fact) bool {
			return f.Data["record"] == record && f.Data["operation"] == "write"
		}) {
			t.Errorf("no store.failed fact for a write of %s: %v", record, obs.Facts("store.failed"))
		}
	}
}

// readEnvFile reads the "export NAME='value'" lines a script wrote (postgres.sh start FILE, pgbouncer.sh start).
func readEnvFile(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, _ := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		vars[k] = strings.Trim(v, "'")
	}
	return vars
}

// storeTask makes the task cfg of tl and detaches it: the Store holds it, for a Router in store mode to bring in.
func storeTask(t testing.TB, tl *tool.Tool, cfg tool.TaskConfig) {
	t.Helper()
	task, err := tl.NewTask(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Detach(context.Background()); err != nil {
		t.Fatal(err)
	}
}
