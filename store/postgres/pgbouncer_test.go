package postgres_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/store/postgres"
	"github.com/commonagents-go/tool/store/storetest"
	"github.com/commonagents-go/tool/tooltest"
)

// pgBouncer starts a PgBouncer of the test's own in transaction mode in front of the test server, with
// scripts/pgbouncer.sh (which installs the Debian package when it is missing), and returns its DSN; it is
// stopped when t ends. Where it cannot start (no package and not root) the test is skipped, except in CI.
func pgBouncer(t *testing.T) string {
	t.Helper()
	server := dsn(t)
	script, err := filepath.Abs("../../scripts/pgbouncer.sh")
	if err != nil {
		t.Fatal(err)
	}
	env := filepath.Join(t.TempDir(), "env")
	if out, err := exec.Command(script, "start", server, env).CombinedOutput(); err != nil {
		if _, ci := os.LookupEnv("CI"); ci {
			t.Fatalf("start PgBouncer: %v\n%s", err, out)
		}
		t.Skipf("PgBouncer cannot start here: %v\n%s", err, out)
	}
	vars := readEnvFile(t, env)
	t.Cleanup(func() { _ = exec.Command(script, "stop", vars["TOOL_TEST_PGBOUNCER_DIR"]).Run() })
	return vars["TOOL_TEST_PGBOUNCER_DSN"]
}

// The Store works behind PgBouncer in transaction mode (issue 41, item 4): the whole conformance suite, and
// webhook deliveries claimed and recorded through it, with a retry discarded as a duplicate. Each transaction
// may run on another server connection, so the DSN asks pgx for unnamed statements (default_query_exec_mode=exec,
// docs/scaling.md); the migration's advisory lock is transaction-scoped, which transaction pooling keeps.
func TestStoreBehindPgBouncer(t *testing.T) {
	bouncer := pgBouncer(t)
	openBehind := func(t *testing.T, schema string) *postgres.Store {
		s, err := postgres.Open(context.Background(), bouncer, postgres.WithSchema(schema))
		if err != nil {
			t.Fatalf("Open behind PgBouncer: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	t.Run("Conformance", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) tool.Store { return openBehind(t, newSchema(t)) })
	})
	t.Run("Deliveries", func(t *testing.T) {
		ctx := context.Background()
		st := openBehind(t, newSchema(t))
		tl, err := tool.Load(ctx, []byte(hooks), tool.WithStore(st), tool.WithSettings(map[string]any{"secret": "s3cret"}))
		if err != nil {
			t.Fatal(err)
		}
		task, err := tl.NewTask(ctx, tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}})
		if err != nil {
			t.Fatal(err)
		}
		defer task.Close(ctx)
		body := []byte(`{"ref":"refs/heads/main","repository":{"full_name":"o/r"}}`)
		for i := range 20 {
			id := fmt.Sprint("d-", i)
			if d, err := task.Deliver(ctx, tooltest.Signer{Secret: "s3cret"}.GitHub(body, id)); err != nil || len(d.Activations) != 1 {
				t.Fatalf("delivery %s: %+v, %v; want activated", id, d, err)
			}
			d, err := task.Deliver(ctx, tooltest.Signer{Secret: "s3cret"}.GitHub(body, id))
			if err != nil || len(d.Discarded) != 1 || d.Discarded[0].Reason != tool.ReasonDuplicate {
				t.Fatalf("retry of %s: %+v, %v; want a duplicate", id, d, err)
			}
		}
	})
}
