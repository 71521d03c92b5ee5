package temporaltool

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	tool "github.com/commonagents-go/tool"
)

// The secret settings of the tests: no history may hold them, raw or base64.
const (
	testAPIKey        = "sk-shop-7f3a9c2e1b"
	testWebhookSecret = "whsec-shop-4d8e0a6c"
)

// shop is the fake shop: it counts the requests per path and ref, holds an order its delay_ms, refuses
// /quota and /busy once with 429 Retry-After: 2, and echoes the API key from /echo.
type shop struct {
	*httptest.Server
	mu      sync.Mutex
	counts  map[string]int // "POST /orders ref", "GET /quota key", ...
	arrived map[string]chan struct{}
	by      map[string]string // the worker that sent a key's first request: its base URL's /wN prefix
}

func newShop(t testing.TB) *shop {
	s := &shop{counts: map[string]int{}, arrived: map[string]chan struct{}{}, by: map[string]string{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// count returns how many requests of "METHOD path key" the shop got.
func (s *shop) count(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[key]
}

// first records a request of key from worker and reports whether it is its first.
func (s *shop) first(key, worker string) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts[key]++
	if s.counts[key] == 1 {
		s.by[key] = worker
		close(s.arrivedLocked(key))
	}
	return s.counts[key], s.counts[key] == 1
}

// arrival is closed when the first request of key arrives.
func (s *shop) arrival(key string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.arrivedLocked(key)
}

func (s *shop) arrivedLocked(key string) chan struct{} {
	ch := s.arrived[key]
	if ch == nil {
		ch = make(chan struct{})
		s.arrived[key] = ch
	}
	return ch
}

// sender is the worker that sent key's first request ("w1", "w2", ...; "" without a prefix).
func (s *shop) sender(key string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.by[key]
}

func (s *shop) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	var worker string
	if rest, ok := strings.CutPrefix(r.URL.Path, "/w"); ok {
		if n, tail, ok := strings.Cut(rest, "/"); ok {
			worker, r.URL.Path = "w"+n, "/"+tail
		}
	}
	first := func(key string) (int, bool) { return s.first(key, worker) }
	var body struct{ Ref, Item, Account, DelayMS string }
	if r.Method == http.MethodPost {
		var raw map[string]any
		_ = json.NewDecoder(r.Body).Decode(&raw)
		str := func(k string) string {
			if raw[k] == nil {
				return ""
			}
			return fmt.Sprint(raw[k])
		}
		body.Ref, body.Item, body.Account, body.DelayMS = str("ref"), str("item"), str("account"), str("delay_ms")
	}
	hold := func(ms string) { // a request whose sender gives up is counted as "cancelled <path>"
		n, _ := strconv.Atoi(ms)
		select {
		case <-time.After(time.Duration(n) * time.Millisecond):
		case <-r.Context().Done():
			first("cancelled " + r.URL.Path)
		}
	}
	switch p := r.URL.Path; {
	case r.Method == http.MethodPost && p == "/orders":
		n, _ := first("POST /orders " + body.Ref)
		hold(body.DelayMS)
		fmt.Fprintf(w, `{"order_no":%d,"ref":%q}`, n, body.Ref)
	case r.Method == http.MethodPost && p == "/busy":
		if _, first := first("POST /busy " + body.Ref); first {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		fmt.Fprintf(w, `{"ok":true}`)
	case strings.HasPrefix(p, "/orders/"):
		ref := strings.TrimPrefix(p, "/orders/")
		if _, first := first("GET /orders " + ref); first {
			hold(r.URL.Query().Get("delay_ms"))
		}
		fmt.Fprintf(w, `{"ref":%q,"orders":%d}`, ref, s.count("POST /orders "+ref))
	case p == "/export":
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		first("GET /export")
		fmt.Fprintf(w, `{"data":%q}`, strings.Repeat("x", n))
	case p == "/quota":
		if _, first := first("GET /quota " + r.URL.Query().Get("key")); first {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		fmt.Fprintf(w, `{"quota":42}`)
	case p == "/echo":
		key := r.Header.Get("X-Api-Key")
		w.Header().Set("X-Echo", key)
		if r.URL.Query().Get("fail") == "true" {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"message":"bad key %s"}`, key)
			return
		}
		fmt.Fprintf(w, `{"key":%q}`, key)
	default:
		http.NotFound(w, r)
	}
}

// deadURL is the URL of a loopback port nothing listens on.
func deadURL(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// world is one worker's side: the shop tool over a Store, served by a Router in store mode, and its Activities.
type world struct {
	tool   *tool.Tool
	router *tool.Router
	acts   *Activities
	sink   tool.Sink // the tasks' Sink (Config); nil: none
}

// worldOptions configure newWorld.
type worldOptions struct {
	store     tool.Store // default: a memory store
	shopURL   string
	deadURL   string
	replicaID string
	sink      tool.Sink
	maxResult int
	limits    *tool.Limits
}

// newWorld loads the shop tool and serves it in store mode; t's cleanup closes the Router.
func newWorld(t testing.TB, o worldOptions) *world {
	t.Helper()
	w, err := openWorld(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.router.Close(context.Background()) })
	return w
}

func openWorld(ctx context.Context, o worldOptions) (*world, error) {
	manifest, err := os.ReadFile("testdata/shop.yaml")
	if err != nil {
		return nil, err
	}
	if o.store == nil {
		o.store = tool.NewMemoryStore()
	}
	if o.replicaID == "" {
		o.replicaID = "worker-1"
	}
	opts := []tool.Option{tool.WithStore(o.store), tool.WithRouteIndex(), tool.WithReplicaID(o.replicaID),
		tool.WithSettings(map[string]any{"base_url": o.shopURL, "dead_url": o.deadURL, "api_key": testAPIKey,
			"webhook_secret": testWebhookSecret})}
	if o.limits != nil {
		opts = append(opts, tool.WithLimits(*o.limits))
	}
	tl, err := tool.Load(ctx, manifest, opts...)
	if err != nil {
		return nil, err
	}
	if _, err := tl.ReindexRoutes(ctx); err != nil {
		return nil, err
	}
	w := &world{tool: tl, router: tool.NewRouter(tool.RouterOptions{}), sink: o.sink}
	config := func(_ context.Context, ref TaskRef) (tool.TaskConfig, error) {
		// The account binds from the task ID's first part: "acme-1" is account acme.
		account, _, _ := strings.Cut(ref.ID, "-")
		return tool.TaskConfig{ID: ref.ID, Sink: w.sink,
			Capability: tool.Capability{Bindings: map[string]any{"account": account}}}, nil
	}
	hydrate := func(ctx context.Context, id string) (tool.TaskConfig, bool) {
		cfg, err := config(ctx, TaskRef{Namespace: tl.Namespace(), Tool: tl.Name(), ID: id})
		return cfg, err == nil
	}
	if err := w.router.Serve(ctx, tl, hydrate); err != nil {
		return nil, err
	}
	w.acts = &Activities{Router: w.router, Tools: map[string]*tool.Tool{tl.Namespace() + "/" + tl.Name(): tl},
		Config: config, MaxResultBytes: o.maxResult}
	return w, nil
}

// ref is the TaskRef of the shop task id.
func ref(id string) TaskRef { return TaskRef{Namespace: "examples", Tool: "shop", ID: id} }
