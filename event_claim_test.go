package tool_test

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/store"
	"github.com/commonagents-go/tool/tooltest"
)

// deliveryOps is a shared Store that records the operations on delivery ids (claims and records).
type deliveryOps struct {
	store.SwapStore
	mu  sync.Mutex
	ops []string
}

func (s *deliveryOps) note(op, key string) {
	if strings.Contains(key, "/deliveries/") {
		s.mu.Lock()
		s.ops = append(s.ops, op)
		s.mu.Unlock()
	}
}

func (s *deliveryOps) Get(ctx context.Context, key string) ([]byte, error) {
	s.note("get", key)
	return s.SwapStore.Get(ctx, key)
}

func (s *deliveryOps) Put(ctx context.Context, key string, value []byte) error {
	s.note("put", key)
	return s.SwapStore.Put(ctx, key, value)
}

func (s *deliveryOps) Delete(ctx context.Context, key string) error {
	s.note("delete", key)
	return s.SwapStore.Delete(ctx, key)
}

func (s *deliveryOps) CompareAndSwap(ctx context.Context, key string, old, next []byte) (bool, error) {
	s.note("swap", key)
	return s.SwapStore.CompareAndSwap(ctx, key, old, next)
}

func (s *deliveryOps) taken() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.ops
	s.ops = nil
	return out
}

// A webhook that two events take claims the delivery id only for the event it activates: the event whose filter
// is false costs no Store operation, only its discard fact (issue 41).
func TestWebhookClaimsOnlyTheEventsItActivates(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("testdata/ok/github-pr.yaml")
	if err != nil {
		t.Fatal(err)
	}
	st := &deliveryOps{SwapStore: tool.NewMemoryStore().(store.SwapStore)}
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
	if ops := st.taken(); strings.Join(ops, " ") != "get swap put" {
		t.Errorf("Store operations on delivery ids: %v, want get swap put (the activated event's claim and record only)", ops)
	}
	if n := len(obs.Facts("event.discarded")); n != 1 {
		t.Errorf("%d event.discarded facts, want 1 (review's filter_false)", n)
	}
}
