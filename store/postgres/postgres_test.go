package postgres_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/internal/leakcheck"
	"github.com/commonagents-go/tool/store"
	"github.com/commonagents-go/tool/store/postgres"
	"github.com/commonagents-go/tool/store/storetest"
	"github.com/jackc/pgx/v5"
)

// dsn returns the test server's DSN from TOOL_TEST_POSTGRES_DSN (scripts/postgres.sh start sets it). Without it
// the test is skipped, except in CI, where it fails: CI always runs the PostgreSQL tests.
func dsn(t testing.TB) string {
	t.Helper()
	d := os.Getenv("TOOL_TEST_POSTGRES_DSN")
	if d == "" {
		if _, ci := os.LookupEnv("CI"); ci {
			t.Fatal("TOOL_TEST_POSTGRES_DSN is unset in CI: start a server with scripts/postgres.sh start")
		}
		t.Skip("TOOL_TEST_POSTGRES_DSN is unset: start a server with scripts/postgres.sh start")
	}
	return d
}

// admin returns a plain connection pool to the test database, closed when t ends.
func admin(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// newSchema returns a fresh schema name, dropped with everything in it when t ends.
func newSchema(t testing.TB) string {
	t.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	name := "storetest_" + hex.EncodeToString(b)
	db := admin(t)
	t.Cleanup(func() {
		if _, err := db.Exec(`DROP SCHEMA IF EXISTS ` + pgx.Identifier{name}.Sanitize() + ` CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", name, err)
		}
	})
	return name
}

// open opens a Store in schema, closed when t ends.
func open(t testing.TB, schema string, opts ...postgres.Option) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), dsn(t), append([]postgres.Option{postgres.WithSchema(schema)}, opts...)...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestConformance(t *testing.T) {
	dsn(t)
	storetest.Run(t, func(t *testing.T) tool.Store { return open(t, newSchema(t)) })
}

// TestReopen: what one process wrote, the next one reads (the point of a durable store).
func TestReopen(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	ctx := t.Context()
	first, err := postgres.Open(ctx, dsn(t), postgres.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Put(ctx, "tasks/t1/allowlist", []byte(`{"a":["1"]}`)); err != nil {
		t.Fatal(err)
	}
	if ok, err := first.Lease(ctx, "tasks/t1/lease", "replica-1", time.Hour); err != nil || !ok {
		t.Fatalf("Lease = %v, %v", ok, err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	second := open(t, schema)
	got, err := second.Get(ctx, "tasks/t1/allowlist")
	if err != nil || string(got) != `{"a":["1"]}` {
		t.Fatalf("Get after reopen = %q, %v", got, err)
	}
	if ok, err := second.Lease(ctx, "tasks/t1/lease", "replica-2", time.Hour); err != nil || ok {
		t.Fatalf("Lease by another replica after reopen = %v, %v; want false", ok, err)
	}
}

// TestConcurrentOpen: processes opening one fresh schema at once all succeed and create it once.
func TestConcurrentOpen(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	const n = 6
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := make(chan struct{})
	for range n {
		wg.Go(func() {
			<-start
			s, err := postgres.Open(t.Context(), dsn(t), postgres.WithSchema(schema), postgres.WithMaxConns(2))
			if err != nil {
				errs <- err
				return
			}
			errs <- s.Close()
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent Open: %v", err)
		}
	}
	var rows, version int
	err := admin(t).QueryRow(`SELECT count(*), max(version) FROM `+pgx.Identifier{schema, "tool_schema_version"}.Sanitize()).
		Scan(&rows, &version)
	if err != nil {
		t.Fatal(err)
	}
	if rows != 1 || version != postgres.SchemaVersion {
		t.Fatalf("schema_version has %d row(s), version %d; want 1 row, version %d", rows, version, postgres.SchemaVersion)
	}
}

// TestNewerSchema: a database migrated by a newer library is refused, not misread.
func TestNewerSchema(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	open(t, schema)
	if _, err := admin(t).Exec(`UPDATE ` + pgx.Identifier{schema, "tool_schema_version"}.Sanitize() + ` SET version = 99`); err != nil {
		t.Fatal(err)
	}
	_, err := postgres.Open(t.Context(), dsn(t), postgres.WithSchema(schema))
	if err == nil || !strings.Contains(err.Error(), "schema version 99 is newer") {
		t.Fatalf("Open of a newer schema: %v", err)
	}
}

// TestSchemaUpgradeFromVersion1: a database of schema version 1 (as the library before the routing index left
// it, with a stored key) is migrated to the current version in place: the key stays, and the routing index
// and the tasks' expiries work. Going back is refused by the older library, as TestNewerSchema shows for any newer version.
func TestSchemaUpgradeFromVersion1(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	q := pgx.Identifier{schema}.Sanitize() + "."
	for _, stmt := range []string{ // version 1, as released: never changes
		`CREATE SCHEMA ` + pgx.Identifier{schema}.Sanitize(),
		`CREATE TABLE ` + q + `tool_schema_version (version integer NOT NULL)`,
		`INSERT INTO ` + q + `tool_schema_version (version) VALUES (1)`,
		`CREATE TABLE ` + q + `tool_kv (key bytea PRIMARY KEY, value bytea NOT NULL, expires_at timestamptz)`,
		`CREATE INDEX ON ` + q + `tool_kv (expires_at) WHERE expires_at IS NOT NULL`,
		`CREATE TABLE ` + q + `tool_leases (key bytea PRIMARY KEY, owner bytea NOT NULL, until timestamptz NOT NULL)`,
		`INSERT INTO ` + q + `tool_kv (key, value) VALUES ('tasks/ns/tool/t1/allowlist'::bytea, 'kept'::bytea)`,
	} {
		if _, err := admin(t).Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	s := open(t, schema)
	var version int
	if err := admin(t).QueryRow(`SELECT version FROM ` + q + `tool_schema_version`).Scan(&version); err != nil || version != postgres.SchemaVersion {
		t.Fatalf("version after Open = %d, %v; want %d", version, err, postgres.SchemaVersion)
	}
	if v, err := s.Get(t.Context(), "tasks/ns/tool/t1/allowlist"); err != nil || string(v) != "kept" {
		t.Fatalf("the version-1 key after the upgrade: %q, %v", v, err)
	}
	rs := tool.Store(s).(store.RouteStore)
	if err := rs.PutRoutes(t.Context(), "tasks/ns/tool/t1/", [][]byte{[]byte("r")}); err != nil {
		t.Fatal(err)
	}
	hits, err := rs.Lookup(t.Context(), [][]byte{[]byte("r")}, "", 10)
	if err != nil || len(hits) != 1 || len(hits[0].Hits) != 1 || hits[0].Hits[0].Task != "tasks/ns/tool/t1/" {
		t.Fatalf("Lookup after the upgrade = %+v, %v", hits, err)
	}
	es := tool.Store(s).(store.TaskExpiryStore) // version 3
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := es.SetTaskExpiry(t.Context(), "tasks/ns/tool/t1/", at); err != nil {
		t.Fatal(err)
	}
	if got, err := es.ExpiredTasks(t.Context(), "tasks/", at, store.TaskExpiry{}, 10); err != nil || len(got) != 1 {
		t.Fatalf("ExpiredTasks after the upgrade = %+v, %v", got, err)
	}
}

// TestSchemaNameQuoted: the schema name is an identifier, never SQL, also inside the functions' dollar-quoted
// bodies (schema version 4): a name holding their quotes neither ends a body early nor runs.
func TestSchemaNameQuoted(t *testing.T) {
	t.Parallel()
	schema := newSchema(t) + `"; DROP SCHEMA public; -- $$ $tool$ $tool1$; CREATE TABLE public.injected_$$ (x int); --`
	t.Cleanup(func() {
		admin(t).Exec(`DROP SCHEMA IF EXISTS ` + pgx.Identifier{schema}.Sanitize() + ` CASCADE`)
	})
	s := open(t, schema)
	if err := s.Put(t.Context(), "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := admin(t).QueryRow(`SELECT count(*) FROM ` + pgx.Identifier{schema, "tool_kv"}.Sanitize()).Scan(&n); err != nil || n != 1 {
		t.Fatalf("rows in the quoted schema = %d, %v; want 1", n, err)
	}
	rs := tool.Store(s).(store.RouteStore) // tool_lookup, whose body names the schema
	if err := rs.PutRoutes(t.Context(), "tasks/ns/tool/t1/", [][]byte{[]byte("r")}); err != nil {
		t.Fatal(err)
	}
	if hits, err := rs.Lookup(t.Context(), [][]byte{[]byte("r")}, "", 10); err != nil || len(hits) != 1 || len(hits[0].Hits) != 1 {
		t.Fatalf("Lookup in the quoted schema = %+v, %v", hits, err)
	}
	var injected bool
	if err := admin(t).QueryRow(`SELECT to_regclass('public.injected_$$') IS NOT NULL`).Scan(&injected); err != nil || injected {
		t.Fatalf("a table named in the schema name was created (%v, %v)", injected, err)
	}
}

// TestCleanup: expired keys and leases are deleted from the tables, by Cleanup and by the background sweep.
func TestCleanup(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	ctx := t.Context()
	s := open(t, schema, postgres.WithCleanupInterval(0))
	db := admin(t)
	count := func(table string) int {
		t.Helper()
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM ` + pgx.Identifier{schema, table}.Sanitize()).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, k := range []string{"d1", "d2", "d3"} {
		if err := s.PutTTL(ctx, k, []byte("x"), time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutTTL(ctx, "live", []byte("x"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "forever", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lease(ctx, "lease", "a", time.Millisecond); err != nil {
		t.Fatal(err)
	}
	waitExpired(t, s, "d3")
	n, err := s.Cleanup(ctx)
	if err != nil || n != 3 {
		t.Fatalf("Cleanup = %d, %v; want 3", n, err)
	}
	if got := count("tool_kv"); got != 2 {
		t.Fatalf("%d rows left in tool_kv, want 2", got)
	}
	if got := count("tool_leases"); got != 0 {
		t.Fatalf("%d rows left in tool_leases, want 0", got)
	}

	// The background sweep does the same on its own.
	bg := open(t, schema, postgres.WithCleanupInterval(20*time.Millisecond))
	if err := bg.PutTTL(ctx, "d4", []byte("x"), time.Millisecond); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for count("tool_kv") != 2 {
		if time.Now().After(deadline) {
			t.Fatal("the background cleanup did not delete an expired key within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func waitExpired(t *testing.T, s *postgres.Store, key string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := s.Get(t.Context(), key)
		if errors.Is(err, tool.ErrNotFound) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not expire within 10s: %v", key, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestCloseEndsGoroutines: Close stops the cleanup goroutine and the pool's.
func TestCloseEndsGoroutines(t *testing.T) {
	schema := newSchema(t)
	leakcheck.Check(t)
	s, err := postgres.Open(t.Context(), dsn(t), postgres.WithSchema(schema), postgres.WithCleanupInterval(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(t.Context(), "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestOpenDB: a Store on the caller's pool leaves the pool open on Close.
func TestOpenDB(t *testing.T) {
	t.Parallel()
	db := admin(t)
	s, err := postgres.OpenDB(t.Context(), db, postgres.WithSchema(newSchema(t)))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(t.Context(), "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.PingContext(t.Context()); err != nil {
		t.Fatalf("the caller's pool was closed: %v", err)
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	s := open(t, newSchema(t))
	long := strings.Repeat("k", postgres.MaxKeyLen+1)
	if err := s.Put(t.Context(), long, nil); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("Put of a %d-byte key: %v", len(long), err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Get(ctx, "k"); !errors.Is(err, context.Canceled) {
		t.Errorf("Get with a cancelled context: %v, want context.Canceled", err)
	}

	// Options are checked; a refused connection names neither the password nor hangs.
	for _, tc := range []struct {
		name string
		dsn  string
		opts []postgres.Option
		want string
	}{
		{"empty schema", dsn(t), []postgres.Option{postgres.WithSchema("")}, "WithSchema"},
		{"negative interval", dsn(t), []postgres.Option{postgres.WithCleanupInterval(-time.Second)}, "WithCleanupInterval"},
		{"zero conns", dsn(t), []postgres.Option{postgres.WithMaxConns(0)}, "WithMaxConns"},
		{"refused", "postgres://u:hunter2secret@127.0.0.1:1/db?sslmode=disable&connect_timeout=5", nil, "connect"},
		{"malformed", "postgres://u:hunter2secret@[::1/db", nil, "postgres store"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := postgres.Open(t.Context(), tc.dsn, tc.opts...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open: %v, want an error containing %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "hunter2secret") {
				t.Fatalf("error shows the password: %v", err)
			}
		})
	}
}

// Open promises that errors never contain the dsn's password; libpq's key=value syntax allows spaces around '='
// and quoted values with escapes. No server is needed: each DSN fails to parse, or to connect (port 1).
func TestDSNPasswordNotInError(t *testing.T) {
	t.Parallel()
	for _, dsn := range []string{
		"postgres://u:hunter2secret@127.0.0.1:1/db?sslmode=disable",
		"host=127.0.0.1 port=1 user=u password=hunter2secret sslmode=disable",
		"host=127.0.0.1 port=1 user=u password = hunter2secret sslmode=bogus",
		`host=127.0.0.1 port=1 user=u password='hunter2\' secret' sslmode=bogus`,
		`user=u password=hunter2\ secret host=127.0.0.1 port=abc`,
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_, err := postgres.Open(ctx, dsn)
		cancel()
		if err == nil {
			t.Fatalf("Open(%q) succeeded", dsn)
		}
		if strings.Contains(err.Error(), "hunter2secret") || strings.Contains(err.Error(), "secret") {
			t.Errorf("error shows (part of) the password: %v", err)
		}
	}
}
