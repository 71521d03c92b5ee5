// Package storetest is the conformance suite every store.Store passes, as testing/fstest is for fs.FS: the memory
// store and store/postgres run it, and a Store of your own (Redis, DynamoDB, ...) proves it behaves as the library
// expects with one line in its tests:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { return openMyStore(t) })
//	}
//
// The optional upgrades (store.SwapStore, store.LeaseStore, store.ClaimStore, store.ExpiringStore,
// store.ScanStore, store.RouteStore, store.TaskExpiryStore, store.BatchStore, store.PartialScanStore) are tested when the store implements them; their subtests are skipped, and say so, when it
// does not.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/commonagents-go/tool/store"
)

// Run runs the suite. open returns a new, empty store for one subtest; it registers the store's cleanup with t.
// Subtests run in parallel, each on its own store. Expiry subtests wait for real time to pass (about a second in
// all), since a Store keeps time on its own clock.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		run  func(t *testing.T, s store.Store)
	}{
		{"GetPutDelete", testGetPutDelete},
		{"Values", testValues},
		{"List", testList},
		{"CompareAndSwap", testCompareAndSwap},
		{"ConcurrentCounter", testConcurrentCounter},
		{"ConcurrentCreate", testConcurrentCreate},
		{"Lease", testLease},
		{"LeaseExpiry", testLeaseExpiry},
		{"ConcurrentLease", testConcurrentLease},
		{"TTL", testTTL},
		{"TTLExpiry", testTTLExpiry},
		{"TTLClearedByWrite", testTTLClearedByWrite},
		{"Claim", testClaim},
		{"ClaimExpiry", testClaimExpiry},
		{"ConcurrentClaim", testConcurrentClaim},
		{"Scan", testScan},
		{"ScanExcept", testScanExcept},
		{"Batch", testBatch},
		{"BatchTTL", testBatchTTL},
		{"Routes", testRoutes},
		{"RoutesPaging", testRoutesPaging},
		{"ConcurrentGeneration", testConcurrentGeneration},
		{"TaskExpiry", testTaskExpiry},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, open(t))
		})
	}
}

func ctx(t *testing.T) context.Context { return t.Context() }

func mustPut(t *testing.T, s store.Store, key string, v []byte) {
	t.Helper()
	if err := s.Put(ctx(t), key, v); err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
}

// wantValue fails unless key holds want.
func wantValue(t *testing.T, s store.Store, key string, want []byte) {
	t.Helper()
	got, err := s.Get(ctx(t), key)
	if err != nil {
		t.Fatalf("Get(%q): %v, want %q", key, err, want)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Get(%q) = %q, want %q", key, got, want)
	}
}

// wantAbsent fails unless Get(key) returns store.ErrNotFound.
func wantAbsent(t *testing.T, s store.Store, key string) {
	t.Helper()
	if got, err := s.Get(ctx(t), key); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get(%q) = %q, %v; want store.ErrNotFound", key, got, err)
	}
}

func wantList(t *testing.T, s store.Store, prefix string, want ...string) {
	t.Helper()
	got, err := s.List(ctx(t), prefix)
	if err != nil {
		t.Fatalf("List(%q): %v", prefix, err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("List(%q) = %q, want %q", prefix, got, want)
	}
}

func testGetPutDelete(t *testing.T, s store.Store) {
	wantAbsent(t, s, "tasks/t1/allowlist")
	mustPut(t, s, "tasks/t1/allowlist", []byte("one"))
	wantValue(t, s, "tasks/t1/allowlist", []byte("one"))
	mustPut(t, s, "tasks/t1/allowlist", []byte("two"))
	wantValue(t, s, "tasks/t1/allowlist", []byte("two"))
	if err := s.Delete(ctx(t), "tasks/t1/allowlist"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	wantAbsent(t, s, "tasks/t1/allowlist")
	if err := s.Delete(ctx(t), "tasks/t1/allowlist"); err != nil {
		t.Fatalf("Delete of an absent key: %v", err)
	}
}

func testValues(t *testing.T, s store.Store) {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	for _, tc := range []struct{ key, value string }{
		{"empty", ""},
		{"binary", string(all)},
		{"large", string(bytes.Repeat([]byte("0123456789abcdef"), 64<<10))},
		{"it's; DROP TABLE x; --", "quote"},
		{`back\slash %_ like`, "like"},
		{"ünïcødé/ключ/鍵", "unicode"},
		{"bytes\x00\x01\xff\xfe", "not UTF-8"},
	} {
		mustPut(t, s, tc.key, []byte(tc.value))
		wantValue(t, s, tc.key, []byte(tc.value))
	}
	// A nil value is stored as an empty one: the key exists.
	mustPut(t, s, "nil", nil)
	wantValue(t, s, "nil", nil)
	wantList(t, s, "nil", "nil")

	// The store keeps copies: neither the caller's slice nor a returned one aliases it.
	in := []byte("original")
	mustPut(t, s, "copy", in)
	in[0] = 'X'
	out, err := s.Get(ctx(t), "copy")
	if err != nil {
		t.Fatal(err)
	}
	out[1] = 'Y'
	wantValue(t, s, "copy", []byte("original"))
}

func testList(t *testing.T, s store.Store) {
	keys := []string{
		"tasks/t1/allowlist", "tasks/t1/events", "tasks/t1/sessions/s1", "tasks/t10/allowlist", "tasks/t2/x",
		"a%b", "a_b", "axb", `a\b`, "a'b", "a", "a\xff", "a\xff\xff", "a\xff\x00", "b", "", "tasks/",
	}
	for i, k := range keys {
		mustPut(t, s, k, []byte(strconv.Itoa(i)))
	}
	sorted := slices.Clone(keys)
	slices.Sort(sorted)
	wantList(t, s, "", sorted...)
	wantList(t, s, "tasks/t1/", "tasks/t1/allowlist", "tasks/t1/events", "tasks/t1/sessions/s1")
	wantList(t, s, "tasks/t1", "tasks/t1/allowlist", "tasks/t1/events", "tasks/t1/sessions/s1", "tasks/t10/allowlist")
	wantList(t, s, "tasks/", "tasks/", "tasks/t1/allowlist", "tasks/t1/events", "tasks/t1/sessions/s1",
		"tasks/t10/allowlist", "tasks/t2/x")
	wantList(t, s, "tasks/t1/sessions/", "tasks/t1/sessions/s1")
	// LIKE's special characters match only themselves.
	wantList(t, s, "a%", "a%b")
	wantList(t, s, "a_", "a_b")
	wantList(t, s, `a\`, `a\b`)
	wantList(t, s, "a'", "a'b")
	// Bytes at the top of the range.
	wantList(t, s, "a\xff", "a\xff", "a\xff\x00", "a\xff\xff")
	wantList(t, s, "a\xff\xff", "a\xff\xff")
	wantList(t, s, "nothing/")
	wantList(t, s, "nothing")
	if err := s.Delete(ctx(t), "tasks/t1/events"); err != nil {
		t.Fatal(err)
	}
	wantList(t, s, "tasks/t1/", "tasks/t1/allowlist", "tasks/t1/sessions/s1")
}

func testCompareAndSwap(t *testing.T, s store.Store) {
	cs, ok := s.(store.SwapStore)
	if !ok {
		t.Skip("not a store.SwapStore")
	}
	cas := func(key string, old, next []byte, want bool) {
		t.Helper()
		got, err := cs.CompareAndSwap(ctx(t), key, old, next)
		if err != nil {
			t.Fatalf("CompareAndSwap(%q, %q, %q): %v", key, old, next, err)
		}
		if got != want {
			t.Fatalf("CompareAndSwap(%q, %q, %q) = %v, want %v", key, old, next, got, want)
		}
	}
	cas("k", []byte("x"), []byte("y"), false) // absent, old given
	wantAbsent(t, s, "k")
	cas("k", nil, []byte("v1"), true) // absent, nil old: created
	wantValue(t, s, "k", []byte("v1"))
	cas("k", nil, []byte("v2"), false) // present, nil old
	cas("k", []byte("v0"), []byte("v2"), false)
	wantValue(t, s, "k", []byte("v1"))
	cas("k", []byte("v1"), []byte("v2"), true)
	wantValue(t, s, "k", []byte("v2"))
	cas("k", []byte("v1"), []byte("v3"), false) // the old value is gone
	// An empty value is present, not absent.
	cas("k", []byte("v2"), []byte{}, true)
	cas("k", nil, []byte("v4"), false)
	cas("k", []byte{}, []byte("v4"), true)
	wantValue(t, s, "k", []byte("v4"))
	if err := s.Delete(ctx(t), "k"); err != nil {
		t.Fatal(err)
	}
	cas("k", []byte("v4"), []byte("v5"), false)
	cas("k", nil, []byte("v5"), true)
	wantList(t, s, "k", "k")
}

// testConcurrentCounter increments one counter from 8 goroutines with read-modify-swap loops: no increment may
// be lost.
func testConcurrentCounter(t *testing.T, s store.Store) {
	cs, ok := s.(store.SwapStore)
	if !ok {
		t.Skip("not a store.SwapStore")
	}
	const workers, each = 8, 20
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for range each {
				if err := increment(ctx(t), cs, "counter"); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	wantValue(t, s, "counter", []byte(strconv.Itoa(workers*each)))
}

func increment(ctx context.Context, s store.SwapStore, key string) error {
	for {
		old, err := s.Get(ctx, key)
		n := 0
		switch {
		case errors.Is(err, store.ErrNotFound):
			old = nil
		case err != nil:
			return err
		default:
			if n, err = strconv.Atoi(string(old)); err != nil {
				return fmt.Errorf("counter holds %q", old)
			}
		}
		ok, err := s.CompareAndSwap(ctx, key, old, []byte(strconv.Itoa(n+1)))
		if err != nil || ok {
			return err
		}
	}
}

// testConcurrentCreate races 8 creations of one key: exactly one wins, and its value is the one stored.
func testConcurrentCreate(t *testing.T, s store.Store) {
	cs, ok := s.(store.SwapStore)
	if !ok {
		t.Skip("not a store.SwapStore")
	}
	winners := race(t, 8, func(i int) (bool, error) {
		return cs.CompareAndSwap(ctx(t), "once", nil, []byte(strconv.Itoa(i)))
	})
	if len(winners) != 1 {
		t.Fatalf("%d creations won, want 1", len(winners))
	}
	wantValue(t, s, "once", []byte(strconv.Itoa(winners[0])))
}

// race runs f(0..n-1) at once and returns the i for which it reported true.
func race(t *testing.T, n int, f func(i int) (bool, error)) []int {
	t.Helper()
	var mu sync.Mutex
	var winners []int
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			<-start
			ok, err := f(i)
			if err != nil {
				errs <- err
				return
			}
			if ok {
				mu.Lock()
				winners = append(winners, i)
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return winners
}

// upgrade returns s as the optional upgrade U (name is how the skip names it), or skips the test.
func upgrade[U store.Store](t *testing.T, s store.Store, name string) U {
	t.Helper()
	u, ok := s.(U)
	if !ok {
		t.Skip("not a store." + name)
	}
	return u
}

func leaseStore(t *testing.T, s store.Store) store.LeaseStore {
	t.Helper()
	return upgrade[store.LeaseStore](t, s, "LeaseStore")
}

func wantLease(t *testing.T, s store.LeaseStore, key, owner string, ttl time.Duration, want bool) {
	t.Helper()
	got, err := s.Lease(ctx(t), key, owner, ttl)
	if err != nil {
		t.Fatalf("Lease(%q, %q): %v", key, owner, err)
	}
	if got != want {
		t.Fatalf("Lease(%q, %q) = %v, want %v", key, owner, got, want)
	}
}

func release(t *testing.T, s store.LeaseStore, key, owner string) {
	t.Helper()
	if err := s.Release(ctx(t), key, owner); err != nil {
		t.Fatalf("Release(%q, %q): %v", key, owner, err)
	}
}

func testLease(t *testing.T, s store.Store) {
	ls := leaseStore(t, s)
	const key = "tasks/t1/lease/poll"
	wantLease(t, ls, key, "a", time.Hour, true)
	wantLease(t, ls, key, "b", time.Hour, false)
	wantLease(t, ls, key, "a", time.Hour, true) // renewal
	release(t, ls, key, "b")                    // not b's: nothing happens
	wantLease(t, ls, key, "b", time.Hour, false)
	wantLease(t, ls, "tasks/t1/lease/other", "b", time.Hour, true) // leases are per key
	release(t, ls, key, "a")
	wantLease(t, ls, key, "b", time.Hour, true)
	wantLease(t, ls, key, "a", time.Hour, false)
	// Leases do not show up as keys.
	wantList(t, s, "tasks/")
	wantAbsent(t, s, key)
}

// testLeaseExpiry: a lease its holder does not renew is taken over once it runs out, and not before.
func testLeaseExpiry(t *testing.T, s store.Store) {
	ls := leaseStore(t, s)
	const key, ttl = "lease", 300 * time.Millisecond
	start := time.Now()
	wantLease(t, ls, key, "a", ttl, true)
	ok, err := ls.Lease(ctx(t), key, "b", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if ok && time.Since(start) < ttl {
		t.Fatalf("b took a's lease %v after it was granted for %v", time.Since(start), ttl)
	}
	eventually(t, func() bool {
		ok, err := ls.Lease(ctx(t), key, "b", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	})
	if d := time.Since(start); d < ttl {
		t.Fatalf("b took a's lease after %v, before its %v ran out", d, ttl)
	}
	wantLease(t, ls, key, "a", ttl, false) // a comes back: b holds it now
	release(t, ls, key, "a")
	wantLease(t, ls, key, "b", time.Hour, true)
}

// testConcurrentLease: of 8 replicas asking at once, exactly one gets the lease.
func testConcurrentLease(t *testing.T, s store.Store) {
	ls := leaseStore(t, s)
	winners := race(t, 8, func(i int) (bool, error) {
		return ls.Lease(ctx(t), "lease", "owner-"+strconv.Itoa(i), time.Hour)
	})
	if len(winners) != 1 {
		t.Fatalf("%d replicas got the lease, want 1", len(winners))
	}
	wantLease(t, ls, "lease", "owner-"+strconv.Itoa(winners[0]), time.Hour, true)
}

func claimStore(t *testing.T, s store.Store) store.ClaimStore {
	t.Helper()
	cs, ok := s.(store.ClaimStore)
	if !ok {
		t.Skip("not a store.ClaimStore")
	}
	return cs
}

// wantClaim fails unless Claim(key, value) reports claimed and, when not, current.
func wantClaim(t *testing.T, s store.ClaimStore, key, value string, ttl time.Duration, claimed bool, current string) {
	t.Helper()
	ok, cur, err := s.Claim(ctx(t), key, []byte(value), ttl)
	if err != nil || ok != claimed || !claimed && string(cur) != current {
		t.Fatalf("Claim(%q, %q) = %v, %q, %v; want %v, %q", key, value, ok, cur, err, claimed, current)
	}
}

// testClaim: a claim creates an absent key and reports a live one's value; a record written over it (PutTTL, Put)
// is what later claims see.
func testClaim(t *testing.T, s store.Store) {
	cs := claimStore(t, s)
	wantClaim(t, cs, "deliveries/d1", "claim r1", time.Hour, true, "")
	wantValue(t, s, "deliveries/d1", []byte("claim r1"))
	wantClaim(t, cs, "deliveries/d1", "claim r2", time.Hour, false, "claim r1")
	mustPut(t, s, "deliveries/d1", []byte("done"))
	wantClaim(t, cs, "deliveries/d1", "claim r3", time.Hour, false, "done")
	wantValue(t, s, "deliveries/d1", []byte("done"))
	if err := s.Delete(ctx(t), "deliveries/d1"); err != nil {
		t.Fatal(err)
	}
	wantClaim(t, cs, "deliveries/d1", "claim r4", time.Hour, true, "")
}

// testClaimExpiry: an expired claim is taken over by the next.
func testClaimExpiry(t *testing.T, s store.Store) {
	cs := claimStore(t, s)
	wantClaim(t, cs, "deliveries/d1", "claim dead", 50*time.Millisecond, true, "")
	eventually(t, func() bool {
		ok, _, err := cs.Claim(ctx(t), "deliveries/d1", []byte("claim next"), time.Hour)
		return err == nil && ok
	})
	wantValue(t, s, "deliveries/d1", []byte("claim next"))
}

// testConcurrentClaim: of racing claims exactly one wins, and the losers see the winner's value.
func testConcurrentClaim(t *testing.T, s store.Store) {
	cs := claimStore(t, s)
	var mu sync.Mutex
	seen := map[string]int{}
	winners := race(t, 8, func(i int) (bool, error) {
		ok, cur, err := cs.Claim(ctx(t), "deliveries/d1", []byte("claim "+strconv.Itoa(i)), time.Hour)
		mu.Lock()
		seen[string(cur)]++
		mu.Unlock()
		return ok, err
	})
	if len(winners) != 1 {
		t.Fatalf("%d claims won, want 1", len(winners))
	}
	if want := "claim " + strconv.Itoa(winners[0]); seen[want] != 7 {
		t.Errorf("losers saw %v, want %q seven times", seen, want)
	}
}

func expiringStore(t *testing.T, s store.Store) store.ExpiringStore {
	t.Helper()
	es, ok := s.(store.ExpiringStore)
	if !ok {
		t.Skip("not a store.ExpiringStore")
	}
	return es
}

func putTTL(t *testing.T, s store.ExpiringStore, key string, v []byte, ttl time.Duration) {
	t.Helper()
	if err := s.PutTTL(ctx(t), key, v, ttl); err != nil {
		t.Fatalf("PutTTL(%q): %v", key, err)
	}
}

// testTTL: a key within its TTL behaves like any other.
func testTTL(t *testing.T, s store.Store) {
	es := expiringStore(t, s)
	putTTL(t, es, "dedupe/d1", []byte("seen"), time.Hour)
	wantValue(t, s, "dedupe/d1", []byte("seen"))
	wantList(t, s, "dedupe/", "dedupe/d1")
	putTTL(t, es, "dedupe/d1", []byte("again"), time.Hour) // overwrites
	wantValue(t, s, "dedupe/d1", []byte("again"))
	if cs, ok := s.(store.SwapStore); ok {
		if ok, err := cs.CompareAndSwap(ctx(t), "dedupe/d1", nil, []byte("x")); err != nil || ok {
			t.Fatalf("CompareAndSwap(nil) on a live TTL key = %v, %v; want false", ok, err)
		}
	}
	if err := s.Delete(ctx(t), "dedupe/d1"); err != nil {
		t.Fatal(err)
	}
	wantAbsent(t, s, "dedupe/d1")
}

// testTTLExpiry: once expired, a key is invisible to Get, List and CompareAndSwap, and may be created again.
func testTTLExpiry(t *testing.T, s store.Store) {
	es := expiringStore(t, s)
	mustPut(t, s, "dedupe/keep", []byte("k"))
	putTTL(t, es, "dedupe/gone", []byte("v"), 50*time.Millisecond)
	eventually(t, func() bool {
		_, err := s.Get(ctx(t), "dedupe/gone")
		return errors.Is(err, store.ErrNotFound)
	})
	wantList(t, s, "dedupe/", "dedupe/keep")
	wantList(t, s, "dedupe/g", []string{}...)
	if cs, ok := s.(store.SwapStore); ok {
		if ok, err := cs.CompareAndSwap(ctx(t), "dedupe/gone", []byte("v"), []byte("w")); err != nil || ok {
			t.Fatalf("CompareAndSwap on the expired value = %v, %v; want false", ok, err)
		}
		if ok, err := cs.CompareAndSwap(ctx(t), "dedupe/gone", nil, []byte("new")); err != nil || !ok {
			t.Fatalf("CompareAndSwap(nil) on an expired key = %v, %v; want true", ok, err)
		}
		wantValue(t, s, "dedupe/gone", []byte("new"))
	}
	// A zero TTL has expired at once.
	putTTL(t, es, "dedupe/zero", []byte("v"), 0)
	wantAbsent(t, s, "dedupe/zero")
}

// testTTLClearedByWrite: Put and CompareAndSwap write values without expiry over a key written with PutTTL. A
// marker key with the same TTL, written after, tells when the old expiry has passed.
func testTTLClearedByWrite(t *testing.T, s store.Store) {
	es := expiringStore(t, s)
	const ttl = 100 * time.Millisecond
	putTTL(t, es, "put", []byte("old"), ttl)
	cs, swap := s.(store.SwapStore)
	if swap {
		putTTL(t, es, "swap", []byte("old"), ttl)
	}
	putTTL(t, es, "marker", []byte("m"), ttl)
	mustPut(t, s, "put", []byte("new"))
	if swap {
		if ok, err := cs.CompareAndSwap(ctx(t), "swap", []byte("old"), []byte("new")); err != nil || !ok {
			t.Fatalf("CompareAndSwap on a live TTL key = %v, %v; want true", ok, err)
		}
	}
	eventually(t, func() bool {
		_, err := s.Get(ctx(t), "marker")
		return errors.Is(err, store.ErrNotFound)
	})
	wantValue(t, s, "put", []byte("new"))
	if swap {
		wantValue(t, s, "swap", []byte("new"))
	}
}

// eventually polls cond until it holds, failing t after 10 s. It is for expiries on a clock the test cannot
// drive (the database's), where no event announces the moment.
func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// testScanExcept: ScanExcept leaves out exactly the keys under the except prefixes, however they overlap or lie
// outside the scanned prefix.
func testScanExcept(t *testing.T, s store.Store) {
	ps, ok := s.(store.PartialScanStore)
	if !ok {
		t.Skip("not a store.PartialScanStore")
	}
	keys := []string{"tasks/a/allowlist", "tasks/a/deliveries/1", "tasks/a/deliveries/2", "tasks/a/deliveriesX",
		"tasks/a/events", "tasks/a/runtime/x", "tasks/a/z\xff", "tasks/ab/x", "tasks/a0", "other/a/1"}
	for _, k := range keys {
		mustPut(t, s, k, []byte("v "+k))
	}
	for _, tc := range []struct {
		prefix string
		except []string
		want   []string
	}{
		{"tasks/a/", []string{"tasks/a/deliveries/"}, []string{"tasks/a/allowlist", "tasks/a/deliveriesX", "tasks/a/events",
			"tasks/a/runtime/x", "tasks/a/z\xff"}},
		{"tasks/a/", []string{"tasks/a/runtime/", "tasks/a/deliveries", "other/", "tasks/a/deliveries/1"},
			[]string{"tasks/a/allowlist", "tasks/a/events", "tasks/a/z\xff"}},
		{"tasks/a/", []string{"tasks/a/z\xff"}, []string{"tasks/a/allowlist", "tasks/a/deliveries/1", "tasks/a/deliveries/2",
			"tasks/a/deliveriesX", "tasks/a/events", "tasks/a/runtime/x"}},
		{"tasks/a/", []string{"tasks/"}, nil},
		{"tasks/a", []string{"tasks/a/"}, []string{"tasks/a0", "tasks/ab/x"}},
		{"tasks/a/", nil, []string{"tasks/a/allowlist", "tasks/a/deliveries/1", "tasks/a/deliveries/2", "tasks/a/deliveriesX",
			"tasks/a/events", "tasks/a/runtime/x", "tasks/a/z\xff"}},
		{"", []string{"tasks/"}, []string{"other/a/1"}},
	} {
		got, err := ps.ScanExcept(ctx(t), tc.prefix, tc.except)
		if err != nil {
			t.Fatalf("ScanExcept(%q, %q): %v", tc.prefix, tc.except, err)
		}
		var keys []string
		for _, e := range got {
			keys = append(keys, e.Key)
			if string(e.Value) != "v "+e.Key {
				t.Errorf("ScanExcept(%q, %q): %q holds %q", tc.prefix, tc.except, e.Key, e.Value)
			}
		}
		if !slices.Equal(keys, tc.want) {
			t.Errorf("ScanExcept(%q, %q) = %q, want %q", tc.prefix, tc.except, keys, tc.want)
		}
	}
}

func batchStore(t *testing.T, s store.Store) store.BatchStore {
	t.Helper()
	bs, ok := s.(store.BatchStore)
	if !ok {
		t.Skip("not a store.BatchStore")
	}
	return bs
}

// testBatch: PutBatch writes every key, creating and overwriting; of two writes of one key the last counts; an
// empty batch is no error.
func testBatch(t *testing.T, s store.Store) {
	bs := batchStore(t, s)
	mustPut(t, s, "batch/b", []byte("old"))
	err := bs.PutBatch(ctx(t), []store.Write{{Key: "batch/a", Value: []byte("1")}, {Key: "batch/b", Value: []byte("2")},
		{Key: "batch/c", Value: []byte("first")}, {Key: "batch/c", Value: []byte("last")}, {Key: "batch/empty"}})
	if err != nil {
		t.Fatalf("PutBatch: %v", err)
	}
	wantValue(t, s, "batch/a", []byte("1"))
	wantValue(t, s, "batch/b", []byte("2"))
	wantValue(t, s, "batch/c", []byte("last"))
	wantValue(t, s, "batch/empty", []byte{})
	wantList(t, s, "batch/", "batch/a", "batch/b", "batch/c", "batch/empty")
	if err := bs.PutBatch(ctx(t), nil); err != nil {
		t.Fatalf("PutBatch(nil): %v", err)
	}
}

// testBatchTTL: a Write with a TTL expires as PutTTL's value does, one without keeps its value, also over a key
// written with a TTL before.
func testBatchTTL(t *testing.T, s store.Store) {
	bs := batchStore(t, s)
	es := expiringStore(t, s)
	putTTL(t, es, "batch/kept", []byte("old"), 100*time.Millisecond)
	err := bs.PutBatch(ctx(t), []store.Write{{Key: "batch/gone", Value: []byte("v"), TTL: 50 * time.Millisecond},
		{Key: "batch/kept", Value: []byte("new")}, {Key: "batch/long", Value: []byte("l"), TTL: time.Hour}})
	if err != nil {
		t.Fatalf("PutBatch: %v", err)
	}
	wantValue(t, s, "batch/long", []byte("l"))
	eventually(t, func() bool {
		_, err := s.Get(ctx(t), "batch/gone")
		return errors.Is(err, store.ErrNotFound)
	})
	putTTL(t, es, "marker", []byte("m"), 100*time.Millisecond) // outlives kept's old expiry
	eventually(t, func() bool {
		_, err := s.Get(ctx(t), "marker")
		return errors.Is(err, store.ErrNotFound)
	})
	wantValue(t, s, "batch/kept", []byte("new"))
	wantValue(t, s, "batch/long", []byte("l"))
	wantList(t, s, "batch/", "batch/kept", "batch/long")
}

func testScan(t *testing.T, s store.Store) {
	ss, ok := s.(store.ScanStore)
	if !ok {
		t.Skip("not a store.ScanStore")
	}
	for _, k := range []string{"tasks/b/1", "tasks/a/2", "tasks/a/1", "tasks/ab", "other/a/1"} {
		mustPut(t, s, k, []byte("v "+k))
	}
	if err := s.Delete(ctx(t), "tasks/a/2"); err != nil {
		t.Fatal(err)
	}
	for prefix, want := range map[string][]string{
		"tasks/a/": {"tasks/a/1"},
		"tasks/a":  {"tasks/a/1", "tasks/ab"},
		"tasks/":   {"tasks/a/1", "tasks/ab", "tasks/b/1"},
		"none/":    nil,
	} {
		got, err := ss.Scan(ctx(t), prefix)
		if err != nil {
			t.Fatalf("Scan(%q): %v", prefix, err)
		}
		var keys []string
		for _, e := range got {
			keys = append(keys, e.Key)
			if string(e.Value) != "v "+e.Key {
				t.Errorf("Scan(%q): %q holds %q", prefix, e.Key, e.Value)
			}
		}
		if !slices.Equal(keys, want) {
			t.Errorf("Scan(%q) = %q, want %q", prefix, keys, want)
		}
	}
	if es, ok := s.(store.ExpiringStore); ok {
		putTTL(t, es, "tasks/c/1", []byte("gone"), 50*time.Millisecond)
		eventually(t, func() bool {
			got, err := ss.Scan(ctx(t), "tasks/c/")
			return err == nil && len(got) == 0
		})
	}
	// The values are the caller's: changing one changes nothing stored.
	got, _ := ss.Scan(ctx(t), "tasks/a/")
	if len(got) == 1 {
		got[0].Value[0] = 'X'
		wantValue(t, s, "tasks/a/1", []byte("v tasks/a/1"))
	}
}

func routeStore(t *testing.T, s store.Store) store.RouteStore {
	t.Helper()
	return upgrade[store.RouteStore](t, s, "RouteStore")
}

// routeTasks renders hits as "task@generation" items.
func routeTasks(h store.RouteHits) []string {
	var out []string
	for _, x := range h.Hits {
		out = append(out, x.Task+"@"+strconv.FormatUint(x.Generation, 10))
	}
	return out
}

// lookup looks routes up and fails the test on an error or a result of the wrong length.
func lookup(t *testing.T, rs store.RouteStore, after string, limit int, routes ...[]byte) []store.RouteHits {
	t.Helper()
	got, err := rs.Lookup(ctx(t), routes, after, limit)
	if err != nil {
		t.Fatalf("Lookup: %v", err)
	}
	if len(got) != len(routes) {
		t.Fatalf("Lookup of %d routes returned %d results", len(routes), len(got))
	}
	return got
}

func testRoutes(t *testing.T, s store.Store) {
	rs := routeStore(t, s)
	// Routes are bytes: a NUL, an invalid UTF-8 byte and a prefix of another route are all distinct routes.
	a, b, c, none := []byte("r\x00a"), []byte{0xff, 0x01}, []byte("r"), []byte("nobody's")
	put := func(task string, routes ...[]byte) {
		t.Helper()
		if err := rs.PutRoutes(ctx(t), task, routes); err != nil {
			t.Fatalf("PutRoutes(%q): %v", task, err)
		}
	}
	put("tasks/ns/tool/t2/", a, b)
	put("tasks/ns/tool/t1/", a)
	put("tasks/ns/tool/t1/", a, c) // a again: no error, no duplicate
	got := lookup(t, rs, "", 10, a, b, c, none, a)
	want := [][]string{
		{"tasks/ns/tool/t1/@0", "tasks/ns/tool/t2/@0"},
		{"tasks/ns/tool/t2/@0"},
		{"tasks/ns/tool/t1/@0"},
		nil,
		{"tasks/ns/tool/t1/@0", "tasks/ns/tool/t2/@0"},
	}
	for i := range want {
		if !slices.Equal(routeTasks(got[i]), want[i]) || got[i].More {
			t.Errorf("route %d: %v (more %v), want %v", i, routeTasks(got[i]), got[i].More, want[i])
		}
	}
	if got := lookup(t, rs, "", 10); len(got) != 0 {
		t.Errorf("Lookup of no routes = %v, want none", got)
	}
	if err := rs.PutRoutes(ctx(t), "tasks/ns/tool/t3/", [][]byte{a, {}}); err == nil {
		t.Error("PutRoutes with an empty route did not fail")
	}

	// Generations count bumps per task, start at 0, and show in every hit of the task.
	for want := uint64(1); want <= 2; want++ {
		g, err := rs.BumpGeneration(ctx(t), "tasks/ns/tool/t1/")
		if err != nil || g != want {
			t.Fatalf("BumpGeneration = %d, %v; want %d", g, err, want)
		}
	}
	if g, err := rs.BumpGeneration(ctx(t), "tasks/ns/tool/unrouted/"); err != nil || g != 1 {
		t.Fatalf("BumpGeneration of a task with no routes = %d, %v; want 1", g, err)
	}
	got = lookup(t, rs, "", 10, a, c)
	if w := []string{"tasks/ns/tool/t1/@2", "tasks/ns/tool/t2/@0"}; !slices.Equal(routeTasks(got[0]), w) {
		t.Errorf("after two bumps of t1: %v, want %v", routeTasks(got[0]), w)
	}
	if w := []string{"tasks/ns/tool/t1/@2"}; !slices.Equal(routeTasks(got[1]), w) {
		t.Errorf("after two bumps of t1: %v, want %v", routeTasks(got[1]), w)
	}

	// Deleting some routes keeps the others and the generation; deleting an absent one is no error.
	if err := rs.DeleteRoutes(ctx(t), "tasks/ns/tool/t1/", [][]byte{a, none}); err != nil {
		t.Fatal(err)
	}
	got = lookup(t, rs, "", 10, a, c)
	if w := []string{"tasks/ns/tool/t2/@0"}; !slices.Equal(routeTasks(got[0]), w) {
		t.Errorf("after deleting t1's route a: %v, want %v", routeTasks(got[0]), w)
	}
	if w := []string{"tasks/ns/tool/t1/@2"}; !slices.Equal(routeTasks(got[1]), w) {
		t.Errorf("t1's other route: %v, want %v", routeTasks(got[1]), w)
	}
	// nil deletes every route of the task and its generation.
	if err := rs.DeleteRoutes(ctx(t), "tasks/ns/tool/t1/", nil); err != nil {
		t.Fatal(err)
	}
	got = lookup(t, rs, "", 10, a, b, c)
	if len(got[2].Hits) != 0 || !slices.Equal(routeTasks(got[0]), []string{"tasks/ns/tool/t2/@0"}) ||
		!slices.Equal(routeTasks(got[1]), []string{"tasks/ns/tool/t2/@0"}) {
		t.Errorf("after deleting all of t1: %v %v %v, want t2 alone", routeTasks(got[0]), routeTasks(got[1]), routeTasks(got[2]))
	}
	put("tasks/ns/tool/t1/", c)
	if got := lookup(t, rs, "", 10, c); !slices.Equal(routeTasks(got[0]), []string{"tasks/ns/tool/t1/@0"}) {
		t.Errorf("t1 routed again: %v, want its generation back at 0", routeTasks(got[0]))
	}
}

func testRoutesPaging(t *testing.T, s store.Store) {
	rs := routeStore(t, s)
	route, other := []byte("popular"), []byte("rare")
	var all []string
	for i := range 7 {
		task := fmt.Sprintf("tasks/ns/tool/%02d/", i)
		all = append(all, task+"@0")
		if err := rs.PutRoutes(ctx(t), task, [][]byte{route}); err != nil {
			t.Fatal(err)
		}
	}
	if err := rs.PutRoutes(ctx(t), "tasks/ns/tool/03/", [][]byte{other}); err != nil {
		t.Fatal(err)
	}
	var pages []string
	after := ""
	for n := 0; ; n++ {
		if n > 7 {
			t.Fatal("paging does not end")
		}
		got := lookup(t, rs, after, 3, route, other)
		page := routeTasks(got[0])
		if len(page) > 3 {
			t.Fatalf("a page of limit 3 holds %v", page)
		}
		pages = append(pages, page...)
		if n == 0 && (!slices.Equal(routeTasks(got[1]), []string{"tasks/ns/tool/03/@0"}) || got[1].More) {
			t.Errorf("the rare route beside the popular one: %v (more %v)", routeTasks(got[1]), got[1].More)
		}
		if !got[0].More {
			break
		}
		if len(page) == 0 {
			t.Fatal("More with an empty page")
		}
		after = got[0].Hits[len(got[0].Hits)-1].Task
	}
	if !slices.Equal(pages, all) {
		t.Errorf("pages = %v, want %v", pages, all)
	}
	// Exactly limit tasks left: no More.
	if got := lookup(t, rs, "tasks/ns/tool/03/", 3, route); got[0].More || len(got[0].Hits) != 3 {
		t.Errorf("the last 3 of 7 with limit 3: %v more %v, want 3 and no more", routeTasks(got[0]), got[0].More)
	}
}

func testConcurrentGeneration(t *testing.T, s store.Store) {
	rs := routeStore(t, s)
	const workers, bumps = 8, 10
	var mu sync.Mutex
	seen := map[uint64]bool{}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range bumps {
				g, err := rs.BumpGeneration(ctx(t), "tasks/ns/tool/hot/")
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if seen[g] {
					t.Errorf("generation %d returned twice", g)
				}
				seen[g] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := rs.PutRoutes(ctx(t), "tasks/ns/tool/hot/", [][]byte{[]byte("r")}); err != nil {
		t.Fatal(err)
	}
	got := lookup(t, rs, "", 1, []byte("r"))
	if w := []string{fmt.Sprintf("tasks/ns/tool/hot/@%d", workers*bumps)}; !slices.Equal(routeTasks(got[0]), w) {
		t.Errorf("after %d concurrent bumps: %v, want %v", workers*bumps, routeTasks(got[0]), w)
	}
}

// testTaskExpiry pins TaskExpiryStore: records by prefix and time, replaced and removed, paged in (At, Task) order.
func testTaskExpiry(t *testing.T, s store.Store) {
	es := upgrade[store.TaskExpiryStore](t, s, "TaskExpiryStore")
	base := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC) // whole seconds: every store keeps them exactly
	set := func(task string, at time.Time) {
		t.Helper()
		if err := es.SetTaskExpiry(ctx(t), task, at); err != nil {
			t.Fatalf("SetTaskExpiry(%q): %v", task, err)
		}
	}
	expired := func(prefix string, now time.Time, after store.TaskExpiry, limit int) []string {
		t.Helper()
		got, err := es.ExpiredTasks(ctx(t), prefix, now, after, limit)
		if err != nil {
			t.Fatalf("ExpiredTasks: %v", err)
		}
		var out []string
		for _, e := range got {
			out = append(out, fmt.Sprintf("%s@%d", e.Task, e.At.Sub(base)/time.Second))
		}
		return out
	}
	set("tasks/ns/tool/c/", base.Add(1*time.Second))
	set("tasks/ns/tool/b/", base.Add(1*time.Second))
	set("tasks/ns/tool/a/", base.Add(2*time.Second))
	set("tasks/ns/tool/z/", base.Add(9*time.Second)) // not yet
	set("tasks/ns/other/a/", base)                   // another tool
	set("tasks/ns/tool/d/", base)
	set("tasks/ns/tool/d/", base.Add(5*time.Second)) // replaced: later
	set("tasks/ns/tool/e/", base)
	set("tasks/ns/tool/e/", time.Time{}) // removed
	set("tasks/ns/tool/never/", time.Time{})
	now := base.Add(5 * time.Second)
	want := []string{"tasks/ns/tool/b/@1", "tasks/ns/tool/c/@1", "tasks/ns/tool/a/@2", "tasks/ns/tool/d/@5"}
	if got := expired("tasks/ns/tool/", now, store.TaskExpiry{}, 10); !slices.Equal(got, want) {
		t.Errorf("expired at +5s = %v, want %v", got, want)
	}
	if got := expired("tasks/ns/tool/", base, store.TaskExpiry{}, 10); len(got) != 0 {
		t.Errorf("expired at +0s = %v, want none", got)
	}
	// Paged: the last record of a page is the next page's mark.
	var pages []string
	after := store.TaskExpiry{}
	for n := 0; ; n++ {
		if n > 4 {
			t.Fatal("paging does not end")
		}
		page, err := es.ExpiredTasks(ctx(t), "tasks/ns/tool/", now, after, 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page {
			pages = append(pages, fmt.Sprintf("%s@%d", e.Task, e.At.Sub(base)/time.Second))
		}
		if len(page) < 3 {
			break
		}
		after = page[len(page)-1]
	}
	if !slices.Equal(pages, want) {
		t.Errorf("pages of 3 = %v, want %v", pages, want)
	}
	if _, err := es.ExpiredTasks(ctx(t), "tasks/", now, store.TaskExpiry{}, 0); err == nil {
		t.Error("ExpiredTasks with limit 0 did not fail")
	}
}
