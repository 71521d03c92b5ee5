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
	if out, err := exec.Command(script, "start", env).CombinedOutput(); err != nil {
		t.Fatalf("start a private PostgreSQL server: %v\n%s", err, out)
	}
	b, err := os.ReadFile(env)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, _ := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		vars[k] = strings.Trim(v, "'")
	}
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
	pg("restart")
	p.publish("d")
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
	if !slices.ContainsFunc(obs.Facts("store.failed"), func(f tool.Fact) bool {
		return f.Data["record"] == "receiver" && f.Data["operation"] == "write"
	}) {
		t.Errorf("no store.failed fact for the poll's state: %v", obs.Facts("store.failed"))
	}
}
