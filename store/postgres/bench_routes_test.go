package postgres_test

import (
	"context"
	"crypto/md5"
	"database/sql"
	"fmt"
	"testing"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/store"
	"github.com/jackc/pgx/v5"
)

// BenchmarkRouteLookup measures RouteStore.Lookup on PostgreSQL over the routes of 100,000 github-pr tasks (seeded
// by SQL: every task has the route of owner "octo", and the route of its own repository; half have a
// generation). RawSelect1, one database/sql round trip of SELECT 1 on the same server, is the floor.
func BenchmarkRouteLookup(b *testing.B) {
	const n = 100_000
	schema := newSchema(b)
	s := open(b, schema)
	q := pgx.Identifier{schema}.Sanitize() + ".tool_routes"
	seed := []string{
		`INSERT INTO ` + q + ` (route, task) SELECT decode(md5('owner octo'), 'hex'), convert_to('tasks/tools/github-pr/task_' || i || '/', 'UTF8') FROM generate_series(1, $1) i`,
		`INSERT INTO ` + q + ` (route, task) SELECT decode(md5('repo repo-' || i), 'hex'), convert_to('tasks/tools/github-pr/task_' || i || '/', 'UTF8') FROM generate_series(1, $1) i`,
		`INSERT INTO ` + q + ` (route, task, gen) SELECT ''::bytea, convert_to('tasks/tools/github-pr/task_' || i || '/', 'UTF8'), 3 FROM generate_series(1, $1, 2) i`,
	}
	for _, stmt := range seed {
		if _, err := admin(b).Exec(stmt, n); err != nil {
			b.Fatalf("%s: %v", stmt, err)
		}
	}
	if _, err := admin(b).Exec(`ANALYZE ` + q); err != nil {
		b.Fatal(err)
	}
	route := func(text string) []byte { sum := md5.Sum([]byte(text)); return sum[:] }
	owner, repo := route("owner octo"), route(fmt.Sprint("repo repo-", n/2+1))
	ctx := context.Background()
	rs := tool.Store(s).(store.RouteStore)
	b.Run("one-selective-route", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			hits, err := rs.Lookup(ctx, [][]byte{repo}, "", 1000)
			if err != nil || len(hits[0].Hits) != 1 || hits[0].Hits[0].Generation != 3 {
				b.Fatalf("%+v %v", hits, err)
			}
		}
	})
	b.Run("owner-and-repo-routes-limit-1000", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			hits, err := rs.Lookup(ctx, [][]byte{owner, repo}, "", 1000)
			if err != nil || len(hits[0].Hits) != 1000 || !hits[0].More || len(hits[1].Hits) != 1 {
				b.Fatalf("%d %v %v", len(hits), hits[0].More, err)
			}
		}
	})
	b.Run("RawSelect1", func(b *testing.B) {
		db, err := sql.Open("pgx", dsn(b))
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		b.ReportAllocs()
		var one int
		for b.Loop() {
			if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
				b.Fatal(err)
			}
		}
	})
}
