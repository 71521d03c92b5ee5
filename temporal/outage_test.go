package temporaltool

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/activity"

	"github.com/commonagents-go/tool/store/postgres"
)

// privatePostgres starts a PostgreSQL server of this test's own (scripts/postgres.sh), so that stopping it never
// stops the one other tests share, and returns its DSN and a function that runs the script's crash or restart on
// it. The server is removed when t ends.
func privatePostgres(t *testing.T) (string, func(cmd string)) {
	t.Helper()
	postgresDSN(t) // skips (or fails in CI) where PostgreSQL cannot be had
	script, err := filepath.Abs("../scripts/postgres.sh")
	if err != nil {
		t.Fatal(err)
	}
	env := filepath.Join(t.TempDir(), "env")
	start := exec.Command(script, "start", env)
	start.Env = append(os.Environ(), "TOOL_POSTGRES_SYNCHRONOUS_COMMIT=on") // a crash loses no commit
	if out, err := start.CombinedOutput(); err != nil {
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

// TestStoreOutageAtTheLendIsRetriedAndSends: attempt 1 of a non-idempotent call finds PostgreSQL down when it
// lends the task; its error is retryable, and it records that it sent nothing, so attempt 2, with the database
// back, sends the POST: once, and the model gets the real result, not outcome_unknown.
func TestStoreOutageAtTheLendIsRetriedAndSends(t *testing.T) {
	dsn, pg := privatePostgres(t)
	st, err := postgres.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s := newShop(t)
	w := newWorld(t, worldOptions{store: st, shopURL: s.URL})
	var lendErr error
	crashed := false
	r := runWithEarlyAttempts(t, w, script{Task: ref("acme-pg1"), Calls: []Call{
		call("pg1-1", "shop_place_order", `{"ref":"pg1","item":"tea"}`)}},
		func(ctx context.Context, c Call) (Outcome, error) {
			pg("crash")
			crashed = true
			defer pg("restart")
			out, err := w.acts.Invoke(ctx, c)
			lendErr = err
			if activity.GetInfo(ctx).Attempt != 1 {
				t.Error("not attempt 1")
			}
			return out, err
		})
	t.Logf("attempt 1: %v", lendErr)
	if !crashed || lendErr == nil || Ended(lendErr) || strings.Contains(lendErr.Error(), "NonRetryable") {
		t.Fatalf("attempt 1 with PostgreSQL down: %v, want a retryable error", lendErr)
	}
	if len(r.Outcomes) != 1 || r.Outcomes[0].IsError || r.Outcomes[0].Attempt != 2 {
		t.Fatalf("outcomes %+v (%q): want attempt 2's real result", r.Outcomes, r.Err)
	}
	if got := s.count("POST /orders pg1"); got != 1 {
		t.Errorf("the shop got %d POSTs, want 1", got)
	}
}
