package postgres_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/store"
)

// BenchmarkStore runs each operation on the memory store and on PostgreSQL in the same run, for the ratio
// BENCHMARKS.md reports. RawSelect1 is the floor: one database/sql round trip of SELECT 1 on the same server.
func BenchmarkStore(b *testing.B) {
	pg := open(b, newSchema(b))
	stores := []struct {
		name string
		s    tool.Store
	}{{"memory", tool.NewMemoryStore()}, {"postgres", pg}}
	ctx := context.Background()
	for _, st := range stores {
		b.Run(st.name+"/Get", func(b *testing.B) {
			if err := st.s.Put(ctx, "tasks/ns/tool/t1/allowlist", []byte(`{"repo":["a/b"]}`)); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := st.s.Get(ctx, "tasks/ns/tool/t1/allowlist"); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(st.name+"/Put", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := st.s.Put(ctx, "tasks/ns/tool/t1/events", []byte(`{"last":"2026-11-22T04:00:00Z"}`)); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(st.name+"/CompareAndSwap", func(b *testing.B) {
			cs := st.s.(store.SwapStore)
			vals := [2][]byte{[]byte(`{"repo":["a/b"]}`), []byte(`{"repo":["a/b","c/d"]}`)}
			if err := st.s.Put(ctx, "tasks/ns/tool/t1/cas", vals[0]); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				ok, err := cs.CompareAndSwap(ctx, "tasks/ns/tool/t1/cas", vals[i%2], vals[(i+1)%2])
				if err != nil || !ok {
					b.Fatalf("CompareAndSwap = %v, %v", ok, err)
				}
				i++
			}
		})
		b.Run(st.name+"/Lease", func(b *testing.B) {
			ls := st.s.(store.LeaseStore)
			b.ReportAllocs()
			for b.Loop() {
				if ok, err := ls.Lease(ctx, "tasks/ns/tool/t1/lease/poll", "replica-1", time.Minute); err != nil || !ok {
					b.Fatalf("Lease = %v, %v", ok, err)
				}
			}
		})
	}
	b.Run("postgres/RawSelect1", func(b *testing.B) {
		db, err := sql.Open("pgx", dsn(b))
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		b.ReportAllocs()
		var n int
		for b.Loop() {
			if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&n); err != nil {
				b.Fatal(err)
			}
		}
	})
}
