package tool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/store"
	"github.com/commonagents-go/tool/tooltest"
)

// A webhook that two events take claims the delivery id only for the event it activates: the event whose filter
// is false costs no Store operation, only its discard fact (issue 41).
func TestWebhookClaimsOnlyTheEventsItActivates(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("testdata/ok/github-pr.yaml")
	if err != nil {
		t.Fatal(err)
	}
	st := &storeOps{st: tool.NewMemoryStore()}
	obs := tooltest.NewObserver()
	tl := tooltest.Load(t, string(src), tool.WithStore(st), tool.WithObserver(obs),
		tool.WithSettings(map[string]any{"github_webhook_secret": "s3cr3t"}), tool.WithAuth(tokens{"github": "ghp_test"}))
	task := tooltest.NewTask(t, tl, tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"owner": "o", "repo": "r"}}})
	comment := `{"action": "created", "issue": {"number": 7, "pull_request": {}}, "comment": {"user": {"login": "ann"}, "body": "LGTM"},
		"repository": {"name": "r", "owner": {"login": "o"}}}`
	d, err := task.Deliver(context.Background(), tooltest.Signer{Secret: "s3cr3t"}.GitHub([]byte(comment), "d-1"))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Activations) != 1 || d.Activations[0].Event != "comment" || len(d.Discarded) != 1 || d.Discarded[0].Reason != tool.ReasonFilterFalse {
		t.Fatalf("delivery %+v, want comment activated and review discarded as filter_false", d)
	}
	// The claim (read, then compare-and-swap) and the record after the Sink accepted: the comment's only.
	var ops []string
	for _, op := range strings.Split(st.taken(), ", ") {
		if strings.HasSuffix(op, " deliveries") {
			ops = append(ops, op)
		}
	}
	if strings.Join(ops, ", ") != "Get deliveries, CompareAndSwap deliveries, PutTTL deliveries" {
		t.Errorf("Store operations on delivery ids: %v, want the activated event's claim (a read, a compare-and-swap) "+
			"and record only", ops)
	}
	if n := len(obs.Facts("event.discarded")); n != 1 {
		t.Errorf("%d event.discarded facts, want 1 (review's filter_false)", n)
	}
}

// storeOps is a shared Store with the upgrades a delivery uses (compare-and-swap, expiry, batches) that records
// every operation as "method part…" (the parts of a task's state it wrote or read: deliveries, events, ...).
type storeOps struct {
	st  store.Store // the memory store: a SwapStore, ExpiringStore and BatchStore
	mu  sync.Mutex
	ops []string
}

func (s *storeOps) note(op string, keys ...string) {
	for _, k := range keys {
		part := k[strings.LastIndex(strings.TrimSuffix(k, "/"), "/")+1:]
		if strings.Contains(k, "/deliveries/") {
			part = "deliveries"
		}
		op += " " + part
	}
	s.mu.Lock()
	s.ops = append(s.ops, op)
	s.mu.Unlock()
}

func (s *storeOps) Get(ctx context.Context, key string) ([]byte, error) {
	s.note("Get", key)
	return s.st.Get(ctx, key)
}

func (s *storeOps) Put(ctx context.Context, key string, value []byte) error {
	s.note("Put", key)
	return s.st.Put(ctx, key, value)
}

func (s *storeOps) Delete(ctx context.Context, key string) error {
	s.note("Delete", key)
	return s.st.Delete(ctx, key)
}

func (s *storeOps) List(ctx context.Context, prefix string) ([]string, error) {
	s.note("List", prefix)
	return s.st.List(ctx, prefix)
}

func (s *storeOps) CompareAndSwap(ctx context.Context, key string, old, next []byte) (bool, error) {
	s.note("CompareAndSwap", key)
	return s.st.(store.SwapStore).CompareAndSwap(ctx, key, old, next)
}

func (s *storeOps) PutTTL(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	s.note("PutTTL", key)
	return s.st.(store.ExpiringStore).PutTTL(ctx, key, value, ttl)
}

func (s *storeOps) PutBatch(ctx context.Context, writes []store.Write) error {
	var keys []string
	for _, w := range writes {
		keys = append(keys, w.Key)
	}
	s.note("PutBatch", keys...)
	return s.st.(store.BatchStore).PutBatch(ctx, writes)
}

func (s *storeOps) taken() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := strings.Join(s.ops, ", ")
	s.ops = nil
	return out
}

var (
	_ store.SwapStore     = (*storeOps)(nil)
	_ store.ExpiringStore = (*storeOps)(nil)
	_ store.BatchStore    = (*storeOps)(nil)
)

// A delivery writes its task's last activity, when that is due (at most once a minute), in the same Store call as
// its delivery id's record: a delivery costs the claim and one write whether or not its activity is written
// (issue 41: a fourth round trip on PostgreSQL before). The activity written is the delivery's.
func TestDeliveryWritesItsActivityWithItsRecord(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("testdata/ok/github-pr.yaml")
	if err != nil {
		t.Fatal(err)
	}
	clock := tooltest.NewClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	st := &storeOps{st: tool.NewMemoryStore()}
	tl := tooltest.Load(t, string(src), tool.WithStore(st), tool.WithClock(clock),
		tool.WithSettings(map[string]any{"github_webhook_secret": "s3cr3t"}), tool.WithAuth(tokens{"github": "ghp_test"}))
	task := tooltest.NewTask(t, tl, tool.TaskConfig{ID: "t1", Capability: tool.Capability{Bindings: map[string]any{"owner": "o", "repo": "r"}}})
	st.taken()
	comment := []byte(`{"action": "created", "issue": {"number": 7, "pull_request": {}}, "comment": {"user": {"login": "ann"}, "body": "LGTM"},
		"repository": {"name": "r", "owner": {"login": "o"}}}`)
	for i, step := range []struct {
		after time.Duration // since the previous delivery
		want  string
	}{
		{0, "Get deliveries, CompareAndSwap deliveries, PutTTL deliveries"},                        // activity written by NewTask
		{2 * time.Minute, "Get deliveries, CompareAndSwap deliveries, PutBatch deliveries events"}, // due: with the record
		{30 * time.Second, "Get deliveries, CompareAndSwap deliveries, PutTTL deliveries"},         // written 30 s ago
		{31 * time.Second, "Get deliveries, CompareAndSwap deliveries, PutBatch deliveries events"},
	} {
		clock.Advance(step.after)
		d, err := task.Deliver(context.Background(), tooltest.Signer{Secret: "s3cr3t"}.GitHub(comment, fmt.Sprint("d-", i)))
		if err != nil || len(d.Activations) != 1 {
			t.Fatalf("delivery %d: %+v, %v; want one activation", i, d, err)
		}
		if got := st.taken(); got != step.want {
			t.Errorf("delivery %d, %v after the previous one: Store operations %q, want %q", i, step.after, got, step.want)
		}
	}
	b, err := st.st.Get(context.Background(), "tasks/tools/github-pr/t1/events")
	if err != nil {
		t.Fatal(err)
	}
	var events struct {
		LastActivityAt time.Time `json:"last_activity_at"`
	}
	if err := json.Unmarshal(b, &events); err != nil || !events.LastActivityAt.Equal(clock.Now()) {
		t.Errorf("stored event state %s (%v): want last_activity_at %v, the last delivery's", b, err, clock.Now())
	}
}
