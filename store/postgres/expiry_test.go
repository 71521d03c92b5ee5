package postgres_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/tooltest"
	"github.com/jackc/pgx/v5"
)

// Expiry in store mode on PostgreSQL (issue 28 with issue 32's ExpiresAt): a stored task whose expiry passed
// while no replica held it is closed when a webhook reaches it (its state, routes and expiry record leave the
// database, the webhook's other task activates, 202), and Router.SweepExpired closes the expired tasks that no
// webhook reaches, leaving the others.
func TestStoreModeExpiry(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	clock := tooltest.NewClock(time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC))
	ctx := context.Background()
	load := func() *tool.Tool {
		tl, err := tool.Load(ctx, []byte(fanManifest), tool.WithStore(open(t, schema)), tool.WithRouteIndex(),
			tool.WithClock(clock))
		if err != nil {
			t.Fatal(err)
		}
		return tl
	}
	a := load() // the replica the tasks started on
	if _, err := a.ReindexRoutes(ctx); err != nil {
		t.Fatal(err)
	}
	t0 := clock.Now()
	for _, task := range []struct {
		id, login string
		expires   time.Time
	}{{"old", "alice", t0.Add(time.Hour)}, {"live", "alice", time.Time{}}, {"swept", "bob", t0.Add(time.Hour)},
		{"later", "bob", t0.Add(10 * time.Hour)}} {
		tk, err := a.NewTask(ctx, tool.TaskConfig{ID: task.id, ExpiresAt: task.expires,
			Capability: tool.Capability{Bindings: map[string]any{"team": "t"}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tk.Invoke(ctx, "follow", map[string]any{"login": task.login}); err != nil {
			t.Fatal(err)
		}
		if err := tk.Detach(ctx); err != nil {
			t.Fatal(err)
		}
	}

	b := load() // a restarted replica, in store mode
	var accepted atomic.Int64
	sink := tool.SinkFunc(func(context.Context, tool.Activation) error { accepted.Add(1); return nil })
	r := tool.NewRouter(tool.RouterOptions{})
	hydrate := func(_ context.Context, id string) (tool.TaskConfig, bool) {
		return tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"team": "t"}}, Sink: sink}, true
	}
	if err := r.Serve(ctx, b, hydrate); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	r.Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	clock.Advance(2 * time.Hour)

	body, _ := json.Marshal(map[string]string{"team": "t", "login": "alice"})
	if status := post(strings.TrimPrefix(srv.URL, "http://"), "d1", body); status != http.StatusAccepted {
		t.Fatalf("webhook for alice: status %d, want 202", status)
	}
	if got := accepted.Load(); got != 1 {
		t.Fatalf("sinks accepted %d, want 1 (live; old had expired)", got)
	}
	wantRows(t, schema, "old", 0)
	n, err := r.SweepExpired(ctx)
	if n != 1 || err != nil {
		t.Fatalf("SweepExpired = %d, %v; want 1 (swept), nil", n, err)
	}
	wantRows(t, schema, "swept", 0)
	for _, id := range []string{"live", "later"} {
		if kv, _, _ := taskRows(t, schema, id); kv == 0 {
			t.Errorf("task %s lost its state to the sweep", id)
		}
	}
	if _, _, exp := taskRows(t, schema, "later"); exp != 1 {
		t.Errorf("later has %d expiry records, want 1", exp)
	}
	if n, err := r.SweepExpired(ctx); n != 0 || err != nil {
		t.Errorf("SweepExpired again = %d, %v; want 0, nil", n, err)
	}
	clock.Advance(9 * time.Hour)
	if n, err := r.SweepExpired(ctx); n != 1 || err != nil {
		t.Errorf("SweepExpired at +11h = %d, %v; want 1 (later), nil", n, err)
	}
	wantRows(t, schema, "later", 0)
}

// taskRows counts what the database holds of task id of fanin: state keys, routes (with the generation row),
// expiry records.
func taskRows(t *testing.T, schema, id string) (kv, routes, expiry int) {
	t.Helper()
	q := pgx.Identifier{schema}.Sanitize() + "."
	prefix := []byte("tasks/tests/fanin/" + id + "/")
	err := admin(t).QueryRow(`SELECT
		(SELECT count(*) FROM `+q+`tool_kv WHERE position($1::bytea in key) = 1),
		(SELECT count(*) FROM `+q+`tool_routes WHERE task = $1),
		(SELECT count(*) FROM `+q+`tool_task_expiry WHERE task = $1)`, prefix).Scan(&kv, &routes, &expiry)
	if err != nil {
		t.Fatal(err)
	}
	return kv, routes, expiry
}

// wantRows fails unless the database holds n rows of each kind for task id.
func wantRows(t *testing.T, schema, id string, n int) {
	t.Helper()
	if kv, routes, expiry := taskRows(t, schema, id); kv != n || routes != n || expiry != n {
		t.Errorf("task %s: %d state keys, %d routes, %d expiry records; want %d of each", id, kv, routes, expiry, n)
	}
}
