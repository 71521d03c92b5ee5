package postgres_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/commonagents-go/tool/store/postgres"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// BenchmarkClientStack weighs the Store's client stack — database/sql over pgx's stdlib adapter — against pgxpool,
// which the raw baseline of the webhook harness uses, on the statement a delivery runs most (the claim: an insert
// with RETURNING), at concurrency 8 and 32, each on a pool of that many connections to the same server, the two
// alternated over rounds (issue 41, item 2). Besides ns/op (wall time per claim, all goroutines together) it
// reports the process's CPU per claim (getrusage: this process only, the server is another), which is what the
// client stack costs a replica that shares its cores.
func BenchmarkClientStack(b *testing.B) {
	ctx := context.Background()
	schema := newSchema(b)
	kv := pgx.Identifier{schema}.Sanitize() + ".tool_kv"
	claim := `INSERT INTO ` + kv + ` AS t (key, value, expires_at) VALUES ($1, $2, now() + $3 * interval '1 microsecond')
		ON CONFLICT (key) DO UPDATE SET
			value = CASE WHEN t.expires_at <= now() THEN EXCLUDED.value ELSE t.value END,
			expires_at = CASE WHEN t.expires_at <= now() THEN EXCLUDED.expires_at ELSE t.expires_at END
		RETURNING value`
	value, ttl := []byte("claim 2026-11-29T00:00:00Z r1"), (5 * time.Minute).Microseconds()
	var seq atomic.Int64
	key := func() []byte { return []byte("claims/" + strconv.FormatInt(seq.Add(1), 10)) }
	for _, c := range []int{8, 32} {
		st := open(b, schema, postgres.WithMaxConns(c))
		cfg, err := pgxpool.ParseConfig(dsn(b))
		if err != nil {
			b.Fatal(err)
		}
		cfg.MaxConns, cfg.MinConns = int32(c), int32(c)
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			b.Fatal(err)
		}
		clients := []struct {
			name  string
			claim func() error
		}{
			{"database-sql", func() error {
				ok, _, err := st.Claim(ctx, string(key()), value, 5*time.Minute)
				if err == nil && !ok {
					err = fmt.Errorf("not claimed")
				}
				return err
			}},
			{"pgxpool", func() error {
				var cur []byte
				return pool.QueryRow(ctx, claim, key(), value, ttl).Scan(&cur)
			}},
		}
		for round := range 3 {
			for _, cl := range clients {
				b.Run(fmt.Sprintf("c=%d/round=%d/%s", c, round, cl.name), func(b *testing.B) {
					var next atomic.Int64
					var failed atomic.Value
					cpu0 := cpuNanos()
					b.ResetTimer()
					var wg sync.WaitGroup
					for range c {
						wg.Go(func() {
							for next.Add(1) <= int64(b.N) {
								if err := cl.claim(); err != nil {
									failed.Store(err)
									return
								}
							}
						})
					}
					wg.Wait()
					b.StopTimer()
					if err, _ := failed.Load().(error); err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(float64(cpuNanos()-cpu0)/float64(b.N)/1e3, "cpu-µs/op")
				})
			}
		}
		pool.Close()
	}
}

// cpuNanos is the user and system CPU time this process used so far.
func cpuNanos() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}
