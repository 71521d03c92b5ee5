package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/commonagents-go/tool/store"
	"github.com/commonagents-go/tool/store/postgres"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// statementCounter counts the statements a pgx connection runs.
type statementCounter struct{ n *atomic.Int64 }

func (c statementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (statementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// openCounted opens a Store in schema whose pool counts its statements into n.
func openCounted(t *testing.T, schema string, n *atomic.Int64, opts ...postgres.Option) *postgres.Store {
	t.Helper()
	pc, err := pgx.ParseConfig(dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	pc.Tracer = statementCounter{n}
	db := stdlib.OpenDB(*pc)
	db.SetMaxOpenConns(8)
	t.Cleanup(func() { db.Close() })
	st, err := postgres.OpenDB(context.Background(), db, append([]postgres.Option{postgres.WithSchema(schema)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// Calls made all at once share statements (WithGroupCommit), and each answers what it answers alone: racing claims
// of one key (one wins, the other sees its value), a claim of a live key without expiry (refused) and of an
// expired one (taken), writes with and without a TTL (one of a microsecond, expired when read), a PutBatch, and
// route lookups with their own after and limit, compared with a Store that does not group.
func TestGroupCommitKeepsOutcomes(t *testing.T) {
	ctx := context.Background()
	schema := newSchema(t)
	var statements atomic.Int64
	st := openCounted(t, schema, &statements, postgres.WithGroupCommit(1))
	alone := open(t, schema, postgres.WithGroupCommit(0))

	const n = 40
	route := func(i int) []byte { return []byte{'r', byte('0' + i%5)} }
	for i := range n {
		if err := alone.Put(ctx, fmt.Sprintf("held/%d", i), []byte("kept")); err != nil {
			t.Fatal(err)
		}
		if ok, _, err := alone.Claim(ctx, fmt.Sprintf("expired/%d", i), []byte("old"), time.Microsecond); err != nil || !ok {
			t.Fatalf("claim expired/%d: %v, %v", i, ok, err)
		}
		task := fmt.Sprintf("t%03d", i)
		if err := alone.PutRoutes(ctx, task, [][]byte{route(i), route(i + 1)}); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			if _, err := alone.BumpGeneration(ctx, task); err != nil {
				t.Fatal(err)
			}
		}
	}
	type lookup struct {
		routes [][]byte
		after  string
		limit  int
	}
	lookups := make([]lookup, n)
	for i := range lookups {
		lookups[i] = lookup{[][]byte{route(i), route(i + 2), []byte("none")}, fmt.Sprintf("t%03d", i%7*5), 1 + i%9}
	}

	var calls []func() error
	winners := make([]atomic.Int64, n)
	seen := make([][2][]byte, n)
	for i := range n {
		for side, value := range []string{"A", "B"} {
			calls = append(calls, func() error {
				ok, current, err := st.Claim(ctx, fmt.Sprintf("race/%d", i), []byte(value), time.Hour)
				if ok {
					winners[i].Add(1)
					current = []byte(value)
				}
				seen[i][side] = current
				return err
			})
		}
		calls = append(calls,
			func() error {
				ok, current, err := st.Claim(ctx, fmt.Sprintf("held/%d", i), []byte("claim"), time.Hour)
				if err == nil && (ok || string(current) != "kept") {
					return fmt.Errorf("claim of held/%d, a live key without expiry: %v, %q; want refused, kept", i, ok, current)
				}
				return err
			},
			func() error {
				ok, _, err := st.Claim(ctx, fmt.Sprintf("expired/%d", i), []byte("new"), time.Hour)
				if err == nil && !ok {
					return fmt.Errorf("claim of expired/%d: refused, want taken over", i)
				}
				return err
			},
			func() error { return st.PutTTL(ctx, fmt.Sprintf("ttl/%d", i), []byte("hour"), time.Hour) },
			func() error { return st.PutTTL(ctx, fmt.Sprintf("gone/%d", i), []byte("µs"), time.Microsecond) },
			func() error { return st.Put(ctx, fmt.Sprintf("put/%d", i), []byte("put")) },
			func() error {
				return st.PutBatch(ctx, []store.Write{{Key: fmt.Sprintf("b1/%d", i), Value: []byte("b1")},
					{Key: fmt.Sprintf("b2/%d", i), Value: []byte("b2"), TTL: time.Hour}})
			},
			func() error {
				l := lookups[i]
				got, err := st.Lookup(ctx, l.routes, l.after, l.limit)
				if err != nil {
					return err
				}
				want, err := alone.Lookup(ctx, l.routes, l.after, l.limit)
				if err == nil && !reflect.DeepEqual(got, want) {
					return fmt.Errorf("lookup %d grouped: %+v, want %+v", i, got, want)
				}
				return err
			})
	}

	before := statements.Load()
	var ready, done sync.WaitGroup
	gate := make(chan struct{})
	errs := make(chan error, len(calls))
	for _, call := range calls {
		ready.Add(1)
		done.Go(func() {
			ready.Done()
			<-gate
			if err := call(); err != nil {
				errs <- err
			}
		})
	}
	ready.Wait()
	close(gate)
	done.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// Each grouped lookup also ran alone on the other Store, which counts nothing.
	if got := statements.Load() - before; got > int64(len(calls)/2) {
		t.Errorf("%d calls made at once ran in %d statements, want at most half as many (grouped)", len(calls), got)
	} else {
		t.Logf("%d calls made at once ran in %d statements", len(calls), got)
	}

	for i := range n {
		if w := winners[i].Load(); w != 1 || string(seen[i][0]) != string(seen[i][1]) {
			t.Errorf("racing claims of race/%d: %d won, they saw %q and %q; want one, both its value", i, w, seen[i][0], seen[i][1])
		}
		for key, want := range map[string]string{"ttl": "hour", "put": "put", "b1": "b1", "b2": "b2", "expired": "new", "held": "kept"} {
			if got, err := alone.Get(ctx, fmt.Sprintf("%s/%d", key, i)); err != nil || string(got) != want {
				t.Errorf("Get %s/%d: %q, %v; want %q", key, i, got, err, want)
			}
		}
		if got, err := alone.Get(ctx, fmt.Sprintf("gone/%d", i)); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Get gone/%d, written with a TTL of 1µs: %q, %v; want expired", i, got, err)
		}
	}
}
