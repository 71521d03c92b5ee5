package postgres_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/store"
	"github.com/jackc/pgx/v5"
)

// BenchmarkResumeTasks resumes every stored task of the hooks tool (allow list with a bound and a grown value,
// event state) with one Tool.RestoreTasks, against the raw baseline of the same run: one range scan reading the same
// rows (SELECT key, value … ORDER BY key on PostgreSQL; Scan on the memory store). Each iteration runs both;
// raw-ms and resume-ms are their times, x-raw their ratio. Sizes 1,000 and 10,000 tasks, and 100,000 with
// TOOL_BENCH_100K=1. RestoreTask-loop is the task-by-task RestoreTask it replaces (1,000 and 10,000 tasks).
func BenchmarkResumeTasks(b *testing.B) {
	ctx := context.Background()
	sizes := []int{1_000, 10_000}
	if os.Getenv("TOOL_BENCH_100K") != "" {
		sizes = append(sizes, 100_000)
	}
	load := func(b *testing.B, store tool.Store) *tool.Tool {
		tl, err := tool.Load(ctx, []byte(hooks), tool.WithStore(store), tool.WithReplicaID("bench"),
			tool.WithSettings(map[string]any{"secret": "s3cret"}))
		if err != nil {
			b.Fatal(err)
		}
		return tl
	}
	configure := func(string) (tool.TaskConfig, bool) {
		return tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}}, true
	}
	template := storedTask(b, load)
	const prefix = "tasks/bench/hooks/"
	for _, n := range sizes {
		mem := tool.NewMemoryStore()
		for i := range n {
			for part, v := range template {
				if err := mem.Put(ctx, fmt.Sprintf("%st%06d/%s", prefix, i, part), v); err != nil {
					b.Fatal(err)
				}
			}
		}
		schema := newSchema(b)
		pg := open(b, schema)
		db := admin(b)
		fill(b, db, schema, mem.(store.ScanStore), prefix)
		stores := []struct {
			name string
			s    tool.Store
			raw  func() (int, error)
		}{
			{"memory", mem, func() (int, error) {
				e, err := mem.(store.ScanStore).Scan(ctx, prefix)
				return len(e), err
			}},
			{"postgres", pg, func() (int, error) { return rawScan(ctx, db, schema, prefix) }},
		}
		for _, st := range stores {
			b.Run(fmt.Sprintf("%s/%d", st.name, n), func(b *testing.B) {
				goroutines := goruntime.NumGoroutine()
				var raw, resume time.Duration
				b.ReportAllocs()
				for b.Loop() {
					start := time.Now()
					rows, err := st.raw()
					if err != nil || rows != n*len(template) {
						b.Fatalf("raw scan: %d rows, %v", rows, err)
					}
					mid := time.Now()
					tasks, err := load(b, st.s).RestoreTasks(ctx, configure)
					if err != nil || len(tasks) != n {
						b.Fatalf("RestoreTasks: %d tasks, %v", len(tasks), err)
					}
					raw, resume = raw+mid.Sub(start), resume+time.Since(mid)
				}
				if g := goruntime.NumGoroutine(); g > goroutines+10 {
					b.Fatalf("resumed tasks left %d goroutines", g-goroutines)
				}
				b.ReportMetric(float64(raw.Milliseconds())/float64(b.N), "raw-ms")
				b.ReportMetric(float64(resume.Milliseconds())/float64(b.N), "resume-ms")
				b.ReportMetric(float64(resume)/float64(raw), "x-raw")
			})
			if n > 10_000 {
				continue
			}
			b.Run(fmt.Sprintf("%s/%d/RestoreTask-loop", st.name, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					tl := load(b, st.s)
					for i := range n {
						cfg, _ := configure("")
						cfg.ID = fmt.Sprintf("t%06d", i)
						if _, err := tl.RestoreTask(ctx, cfg); err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		}
	}
}

// storedTask starts a task of hooks, grows its allow list, detaches it and returns its stored state by part.
func storedTask(b *testing.B, load func(*testing.B, tool.Store) *tool.Tool) map[string][]byte {
	ctx := context.Background()
	mem := tool.NewMemoryStore()
	task, err := load(b, mem).NewTask(ctx, tool.TaskConfig{ID: "t", Capability: tool.Capability{
		Bindings: map[string]any{"repo": "o/r"}}})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := task.Invoke(ctx, "tag", map[string]any{"label": "x"}); err != nil {
		b.Fatal(err)
	}
	if err := task.Detach(ctx); err != nil {
		b.Fatal(err)
	}
	entries, err := mem.(store.ScanStore).Scan(ctx, "tasks/bench/hooks/t/")
	if err != nil || len(entries) == 0 {
		b.Fatalf("stored task: %v %v", entries, err)
	}
	parts := map[string][]byte{}
	for _, e := range entries {
		parts[e.Key[len("tasks/bench/hooks/t/"):]] = e.Value
	}
	return parts
}

// fill copies the rows under prefix from src into schema's table with one INSERT.
func fill(b *testing.B, db *sql.DB, schema string, src store.ScanStore, prefix string) {
	entries, err := src.Scan(context.Background(), prefix)
	if err != nil {
		b.Fatal(err)
	}
	keys, values := make([][]byte, len(entries)), make([][]byte, len(entries))
	for i, e := range entries {
		keys[i], values[i] = []byte(e.Key), e.Value
	}
	q := `INSERT INTO ` + pgx.Identifier{schema, "tool_kv"}.Sanitize() +
		` (key, value) SELECT * FROM unnest($1::bytea[], $2::bytea[])`
	if _, err := db.Exec(q, keys, values); err != nil {
		b.Fatal(err)
	}
}

// rawScan reads every key under prefix with its value, as an application would: one range scan.
func rawScan(ctx context.Context, db *sql.DB, schema, prefix string) (int, error) {
	end := []byte(prefix)
	end[len(end)-1]++
	rows, err := db.QueryContext(ctx, `SELECT key, value FROM `+pgx.Identifier{schema, "tool_kv"}.Sanitize()+
		` WHERE key >= $1 AND key < $2 ORDER BY key`, []byte(prefix), end)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var k, v []byte
		if err := rows.Scan(&k, &v); err != nil {
			return n, err
		}
		n++
	}
	return n, rows.Err()
}
