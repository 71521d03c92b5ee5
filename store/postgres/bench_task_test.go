package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/store/postgres"
	"github.com/commonagents-go/tool/tooltest"
)

const hooks = `kind: commonagents.info/v1beta2/tool
namespace: bench
name: hooks
description: A webhook and an action that grows the allow list.
settings:
  properties:
    secret: {type: string, format: password}
parameters:
  properties:
    repo: {type: string, require_binding: true}
actions:
  - name: tag
    description: Tags the task.
    parameters:
      properties:
        label: {type: string}
    execute:
      cel:
        expression: "input.label"
events:
  - name: pushed
    description: A push.
    message: "push to {event.payload.ref}"
    receive:
      webhook:
        secret: "{settings.secret}"
        filter: "event.payload.repository.full_name == parameters.repo"
`

// BenchmarkTask measures the task paths that write state — Invoke growing the allow list (rewritten: 64 values,
// the oldest evicted each call), Deliver with a new delivery id (checked, claimed, recorded) — and RestoreTask of
// 1,000 stored tasks, on the memory store and on PostgreSQL in the same run.
func BenchmarkTask(b *testing.B) {
	ctx := context.Background()
	for _, st := range []struct {
		name string
		open func() tool.Store
	}{{"memory", tool.NewMemoryStore}, {"postgres", func() tool.Store { return open(b, newSchema(b)) }},
		// The claim as it was before store.ClaimStore: looked up, then compare-and-swap (Deliver only).
		{"postgres-cas", func() tool.Store { return withoutClaim{open(b, newSchema(b))} }}} {
		load := func(store tool.Store) *tool.Tool {
			tl, err := tool.Load(ctx, []byte(hooks), tool.WithStore(store), tool.WithReplicaID("bench"),
				tool.WithSettings(map[string]any{"secret": "s3cret"}), tool.WithLimits(tool.Limits{AllowListValues: 64}))
			if err != nil {
				b.Fatal(err)
			}
			return tl
		}
		cfg := func(id string) tool.TaskConfig {
			return tool.TaskConfig{ID: id, Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}}
		}
		if st.name == "postgres-cas" {
			b.Run(st.name+"/Deliver", func(b *testing.B) { benchDeliver(b, load(st.open())) })
			continue
		}
		b.Run(st.name+"/Invoke", func(b *testing.B) {
			task, err := load(st.open()).NewTask(ctx, cfg("t1"))
			if err != nil {
				b.Fatal(err)
			}
			defer task.Close(ctx)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				if _, err := task.Invoke(ctx, "tag", map[string]any{"label": fmt.Sprint("l", i)}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(st.name+"/Deliver", func(b *testing.B) { benchDeliver(b, load(st.open())) })
		b.Run(st.name+"/Resume1000", func(b *testing.B) {
			store := st.open()
			tl := load(store)
			for n := range 1000 {
				task, err := tl.NewTask(ctx, cfg(fmt.Sprint("r", n)))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := task.Invoke(ctx, "tag", map[string]any{"label": "x"}); err != nil {
					b.Fatal(err)
				}
				if err := task.Detach(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				tl := load(store)
				for n := range 1000 {
					task, err := tl.RestoreTask(ctx, cfg(fmt.Sprint("r", n)))
					if err != nil {
						b.Fatal(err)
					}
					_ = task.Detach(ctx)
				}
			}
		})
	}
}

// benchDeliver delivers a signed webhook with a new delivery id per iteration to one task of tl.
func benchDeliver(b *testing.B, tl *tool.Tool) {
	ctx := context.Background()
	task, err := tl.NewTask(ctx, tool.TaskConfig{ID: "t1", Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}})
	if err != nil {
		b.Fatal(err)
	}
	defer task.Close(ctx)
	signer := tooltest.Signer{Secret: "s3cret"}
	body := []byte(`{"ref":"refs/heads/main","repository":{"full_name":"o/r"}}`)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		in := signer.GitHub(body, fmt.Sprint("d", i))
		d, err := task.Deliver(ctx, in)
		if err != nil || len(d.Activations) != 1 {
			b.Fatalf("Deliver = %+v, %v", d, err)
		}
	}
}

// withoutClaim is the PostgreSQL Store without store.ClaimStore: delivery ids are claimed by Get and
// CompareAndSwap, as before ClaimStore existed.
type withoutClaim struct{ s *postgres.Store }

func (w withoutClaim) Get(ctx context.Context, key string) ([]byte, error) { return w.s.Get(ctx, key) }
func (w withoutClaim) Put(ctx context.Context, key string, v []byte) error {
	return w.s.Put(ctx, key, v)
}
func (w withoutClaim) Delete(ctx context.Context, key string) error { return w.s.Delete(ctx, key) }
func (w withoutClaim) List(ctx context.Context, prefix string) ([]string, error) {
	return w.s.List(ctx, prefix)
}
func (w withoutClaim) CompareAndSwap(ctx context.Context, key string, old, next []byte) (bool, error) {
	return w.s.CompareAndSwap(ctx, key, old, next)
}
func (w withoutClaim) PutTTL(ctx context.Context, key string, v []byte, ttl time.Duration) error {
	return w.s.PutTTL(ctx, key, v, ttl)
}

// countingStore records the Store calls of a task, by method. It is a store.ClaimStore.
type countingStore struct {
	withoutClaim
	calls []string
}

// countingSwapStore is a countingStore without Claim: the claim before store.ClaimStore.
type countingSwapStore struct{ c *countingStore }

func (s countingSwapStore) Get(ctx context.Context, key string) ([]byte, error) {
	return s.c.Get(ctx, key)
}
func (s countingSwapStore) Put(ctx context.Context, key string, v []byte) error {
	return s.c.Put(ctx, key, v)
}
func (s countingSwapStore) Delete(ctx context.Context, key string) error { return s.c.Delete(ctx, key) }
func (s countingSwapStore) List(ctx context.Context, prefix string) ([]string, error) {
	return s.c.List(ctx, prefix)
}
func (s countingSwapStore) CompareAndSwap(ctx context.Context, key string, old, next []byte) (bool, error) {
	return s.c.CompareAndSwap(ctx, key, old, next)
}
func (s countingSwapStore) PutTTL(ctx context.Context, key string, v []byte, ttl time.Duration) error {
	return s.c.PutTTL(ctx, key, v, ttl)
}

func (c *countingStore) Claim(ctx context.Context, key string, v []byte, ttl time.Duration) (bool, []byte, error) {
	c.calls = append(c.calls, "Claim")
	return c.s.Claim(ctx, key, v, ttl)
}
func (c *countingStore) Get(ctx context.Context, key string) ([]byte, error) {
	c.calls = append(c.calls, "Get")
	return c.s.Get(ctx, key)
}
func (c *countingStore) CompareAndSwap(ctx context.Context, key string, old, next []byte) (bool, error) {
	c.calls = append(c.calls, "CompareAndSwap")
	return c.s.CompareAndSwap(ctx, key, old, next)
}
func (c *countingStore) PutTTL(ctx context.Context, key string, v []byte, ttl time.Duration) error {
	c.calls = append(c.calls, "PutTTL")
	return c.s.PutTTL(ctx, key, v, ttl)
}

// TestDeliveryClaimIsOneRoundTrip: a delivery with a new id costs PostgreSQL one statement to claim it (insert-if-
// absent) and one to record it once the Sink accepted, where a lookup and a compare-and-swap claimed it before.
func TestDeliveryClaimIsOneRoundTrip(t *testing.T) {
	ctx := context.Background()
	counting := &countingStore{withoutClaim: withoutClaim{open(t, newSchema(t))}}
	for _, tc := range []struct {
		name  string
		store tool.Store
		want  string
	}{
		{"ClaimStore", counting, "[Claim PutTTL]"},
		{"SwapStore", countingSwapStore{counting}, "[Get CompareAndSwap PutTTL]"}, // the claim before ClaimStore
	} {
		tl, err := tool.Load(ctx, []byte(hooks), tool.WithStore(tc.store), tool.WithSettings(map[string]any{"secret": "s3cret"}))
		if err != nil {
			t.Fatal(err)
		}
		task, err := tl.NewTask(ctx, tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}})
		if err != nil {
			t.Fatal(err)
		}
		in := tooltest.Signer{Secret: "s3cret"}.GitHub([]byte(`{"ref":"refs/heads/main","repository":{"full_name":"o/r"}}`), "d-1")
		counting.calls = nil
		if d, err := task.Deliver(ctx, in); err != nil || len(d.Activations) != 1 {
			t.Fatalf("%s: Deliver = %+v, %v", tc.name, d, err)
		}
		if got := fmt.Sprint(counting.calls); got != tc.want {
			t.Errorf("%s: Store calls of a delivery with a new id: %s, want %s", tc.name, got, tc.want)
		}
		task.Close(ctx)
	}
}

// BenchmarkClaim measures claiming a new key: Claim (one statement) against the lookup and compare-and-swap that
// claimed delivery ids before store.ClaimStore, in the same run. Interleaved alternates the two, one of each per
// iteration, and reports the median of each's own times: on a loaded machine the load then weighs on both alike.
func BenchmarkClaim(b *testing.B) {
	ctx := context.Background()
	s := open(b, newSchema(b))
	value := []byte("claim 2026-11-23T00:00:00Z r1")
	i := 0 // keys are new across every run of the sub-benchmarks
	b.Run("Claim", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			i++
			if ok, _, err := s.Claim(ctx, fmt.Sprint("claim/", i), value, 5*time.Minute); err != nil || !ok {
				b.Fatal(ok, err)
			}
		}
	})
	b.Run("Interleaved", func(b *testing.B) {
		var claims, swaps []time.Duration
		for b.Loop() {
			i++
			start := time.Now()
			if ok, _, err := s.Claim(ctx, fmt.Sprint("claim/", i), value, 5*time.Minute); err != nil || !ok {
				b.Fatal(ok, err)
			}
			mid := time.Now()
			key := fmt.Sprint("cas/", i)
			if _, err := s.Get(ctx, key); !errors.Is(err, tool.ErrNotFound) {
				b.Fatal(err)
			}
			if ok, err := s.CompareAndSwap(ctx, key, nil, value); err != nil || !ok {
				b.Fatal(ok, err)
			}
			claims, swaps = append(claims, mid.Sub(start)), append(swaps, time.Since(mid))
		}
		median := func(d []time.Duration) float64 { slices.Sort(d); return float64(d[len(d)/2].Nanoseconds()) }
		b.ReportMetric(median(claims), "claim-ns/op")
		b.ReportMetric(median(swaps), "get+cas-ns/op")
	})
	b.Run("GetCompareAndSwap", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			i++
			key := fmt.Sprint("cas/", i)
			if _, err := s.Get(ctx, key); !errors.Is(err, tool.ErrNotFound) {
				b.Fatal(err)
			}
			if ok, err := s.CompareAndSwap(ctx, key, nil, value); err != nil || !ok {
				b.Fatal(ok, err)
			}
		}
	})
}

// BenchmarkDeliverInterleaved delivers a signed webhook with a new delivery id to three tasks in turn — on the
// memory store, on PostgreSQL claiming in one round trip (ClaimStore), and on PostgreSQL claiming by lookup and
// compare-and-swap (before ClaimStore) — and reports the median of each one's own times, so that a loaded
// machine weighs on all three alike.
func BenchmarkDeliverInterleaved(b *testing.B) {
	ctx := context.Background()
	stores := []tool.Store{tool.NewMemoryStore(), open(b, newSchema(b)), withoutClaim{open(b, newSchema(b))}}
	names := []string{"memory-ns/op", "claim-ns/op", "get+cas-ns/op"}
	tasks := make([]*tool.Task, len(stores))
	for i, store := range stores {
		tl, err := tool.Load(ctx, []byte(hooks), tool.WithStore(store), tool.WithSettings(map[string]any{"secret": "s3cret"}))
		if err != nil {
			b.Fatal(err)
		}
		if tasks[i], err = tl.NewTask(ctx, tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}}); err != nil {
			b.Fatal(err)
		}
		defer tasks[i].Close(ctx)
	}
	signer := tooltest.Signer{Secret: "s3cret"}
	body := []byte(`{"ref":"refs/heads/main","repository":{"full_name":"o/r"}}`)
	times := make([][]time.Duration, len(tasks))
	n := 0
	for b.Loop() {
		n++
		for i, task := range tasks {
			in := signer.GitHub(body, fmt.Sprint("d", n))
			start := time.Now()
			if d, err := task.Deliver(ctx, in); err != nil || len(d.Activations) != 1 {
				b.Fatalf("Deliver = %+v, %v", d, err)
			}
			times[i] = append(times[i], time.Since(start))
		}
	}
	for i, d := range times {
		slices.Sort(d)
		b.ReportMetric(float64(d[len(d)/2].Nanoseconds()), names[i])
	}
}
