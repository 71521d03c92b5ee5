package statefulsession

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/commonagents-go/tool/field"
	"github.com/commonagents-go/tool/internal/httpspec"
	"github.com/commonagents-go/tool/internal/httpspec/httpspectest"
	"github.com/commonagents-go/tool/runtime"
)

// remote is a session API: POST /sessions creates, POST /sessions/{id}/run executes with the session's token,
// DELETE /sessions/{id} destroys. It logs every operation in order.
type remote struct {
	*httptest.Server
	mu            sync.Mutex
	ops           []string
	creates       atomic.Int32
	createStatus  int           // answer creates with this status when not 0
	createDelay   time.Duration // delay before answering a create
	holdCreate    chan struct{} // when set, creates wait for it to close (or the request to end)
	destroyStatus int           // answer destroys with this status when not 0
}

func newRemote(t *testing.T) *remote {
	r := &remote{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /sessions", func(w http.ResponseWriter, req *http.Request) {
		n := r.creates.Add(1)
		r.log("create")
		if r.holdCreate != nil {
			select {
			case <-r.holdCreate:
			case <-req.Context().Done():
				return
			}
		}
		time.Sleep(r.createDelay)
		if r.createStatus != 0 {
			w.WriteHeader(r.createStatus)
			return
		}
		var in struct{ User string }
		_ = json.NewDecoder(req.Body).Decode(&in)
		id := fmt.Sprintf("s-%d", n)
		fmt.Fprintf(w, `{"session":{"id":%q,"token":"tok-%s"},"user":%q}`, id, id, in.User)
	})
	mux.HandleFunc("POST /sessions/{id}/run", func(w http.ResponseWriter, req *http.Request) {
		id := req.PathValue("id")
		r.log("run " + id)
		if req.Header.Get("X-Token") != "tok-"+id {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		body, _ := io.ReadAll(req.Body)
		fmt.Fprintf(w, `{"ran":%q,"input":%s}`, id, body)
	})
	mux.HandleFunc("DELETE /sessions/{id}", func(w http.ResponseWriter, req *http.Request) {
		id := req.PathValue("id")
		r.log("destroy " + id + " " + req.Header.Get("X-Token"))
		if r.destroyStatus != 0 {
			w.WriteHeader(r.destroyStatus)
		}
	})
	r.Server = httptest.NewServer(mux)
	t.Cleanup(r.Close)
	return r
}

func (r *remote) log(op string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, op)
}

func (r *remote) snapshot() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.ops...)
}

// memState is a runtime.State in memory that keeps every saved version.
type memState struct {
	mu    sync.Mutex
	saves [][]byte
}

func (s *memState) Load(context.Context) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.saves) == 0 {
		return nil, nil
	}
	return s.saves[len(s.saves)-1], nil
}

func (s *memState) Save(_ context.Context, v []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saves = append(s.saves, append([]byte(nil), v...))
	return nil
}

func (s *memState) records(t *testing.T) []record {
	t.Helper()
	data, _ := s.Load(context.Background())
	recs, err := decodeState(data)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// factLog records observer facts.
type factLog struct {
	mu   sync.Mutex
	list []string
	data []map[string]any
}

func (f *factLog) observe(_ context.Context, name string, data map[string]any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.list = append(f.list, name)
	f.data = append(f.data, data)
}

func (f *factLog) names() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.list...)
}

func (f *factLog) dump(t *testing.T) string {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := json.Marshal(f.data)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var sharedBlock = map[string]any{
	"create":  map[string]any{"method": "POST", "url": "{settings.base}/sessions", "body": map[string]any{"user": "{parameters.user}"}},
	"extract": map[string]any{"id": "$.session.id", "token": "$.session.token"},
	"destroy": map[string]any{"method": "DELETE", "url": "{settings.base}/sessions/{session.id}",
		"headers": map[string]any{"X-Token": "{session.token}"}},
}

var runBlock = map[string]any{"execute": map[string]any{"method": "POST",
	"url":           "{settings.base}/sessions/{session.id}/run",
	"headers":       map[string]any{"X-Token": "{session.token}"},
	"body":          map[string]any{"q": "{parameters.q}"},
	"response_path": "$.ran"}}

// ownBlock is an action with a session of its own.
func ownBlock() map[string]any {
	b := map[string]any{"execute": runBlock["execute"]}
	for k, v := range sharedBlock {
		b[k] = v
	}
	return b
}

func prepare(t *testing.T, block, shared map[string]any) *Action {
	t.Helper()
	b := &runtime.Block{Kind: Kind, Tool: "t", Action: "a", Value: block,
		Path: field.NewPath("actions").Index(0).Child("execute", Kind), Check: &httpspectest.Checker{}}
	if shared != nil {
		b.Shared, b.SharedPath = shared, field.NewPath(Kind)
	}
	a, err := Backend{}.Prepare(context.Background(), b)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	return a.(*Action)
}

type fixture struct {
	srv   *remote
	state *memState
	facts *factLog
	in    *runtime.Init
}

func newFixture(t *testing.T, act *Action) *fixture {
	srv := newRemote(t)
	f := &fixture{srv: srv, state: &memState{}, facts: &factLog{}}
	f.in = &runtime.Init{TaskID: "task-1", Tool: "t", Action: act, Values: f.values(nil),
		HTTPClient: httpspec.SameHostRedirects(srv.Client()), Limits: runtime.Limits{CallTimeout: 5 * time.Second},
		State: f.state, Observe: f.facts.observe, Logger: slog.New(slog.DiscardHandler)}
	return f
}

func (f *fixture) values(args map[string]any) httpspectest.Roots {
	if args == nil {
		args = map[string]any{"user": "ann"}
	}
	return httpspectest.Roots{"parameters": args, "settings": map[string]any{"base": f.srv.URL}}
}

func (f *fixture) call(args map[string]any) *runtime.Call {
	return &runtime.Call{ID: "c", Action: "run", Args: args, Values: f.values(args)}
}

func TestPrepareSessionKeys(t *testing.T) {
	t.Parallel()
	own := "actions[0].execute.stateful_session"
	tests := []struct {
		name          string
		block, shared map[string]any
		want          string
	}{
		{"execute only shares the top-level session", runBlock, sharedBlock, "stateful_session"},
		{"own create", ownBlock(), sharedBlock, own},
		{"own extract", map[string]any{"execute": runBlock["execute"], "extract": sharedBlock["extract"]}, sharedBlock, own},
		{"own destroy via the teardown alias", map[string]any{"execute": runBlock["execute"], "teardown": sharedBlock["destroy"]}, sharedBlock, own},
		{"no top-level block", ownBlock(), nil, own},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := prepare(t, tc.block, tc.shared).Session; got != tc.want {
				t.Errorf("Session = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSessionLifecycle(t *testing.T) {
	t.Parallel()
	act := prepare(t, runBlock, sharedBlock)
	f := newFixture(t, act)
	inst, err := Backend{}.Initialize(context.Background(), f.in)
	if err != nil {
		t.Fatalf("Initialize: %v", err)
	}
	recs := f.state.records(t)
	if len(recs) != 1 || recs[0].Key != "stateful_session" || recs[0].Values["id"] != "s-1" || recs[0].Values["token"] != "tok-s-1" {
		t.Fatalf("state after create = %+v", recs)
	}
	for _, q := range []any{"first", json.Number("2")} {
		res, err := inst.Invoke(context.Background(), act, f.call(map[string]any{"q": q}))
		if err != nil || res.Error != nil || res.Output != "s-1" {
			t.Fatalf("Invoke(%v) = %+v, %v", q, res, err)
		}
	}
	if err := inst.Teardown(context.Background()); err != nil {
		t.Fatalf("Teardown: %v", err)
	}
	if err := inst.Teardown(context.Background()); err != nil {
		t.Fatalf("second Teardown: %v", err)
	}
	want := []string{"create", "run s-1", "run s-1", "destroy s-1 tok-s-1"}
	if got := f.srv.snapshot(); !slices.Equal(got, want) {
		t.Errorf("server saw %q, want %q", got, want)
	}
	if recs := f.state.records(t); len(recs) != 0 {
		t.Errorf("state after destroy = %+v, want empty", recs)
	}
	if got := f.facts.names(); !slices.Equal(got, []string{"session.created", "session.destroyed"}) {
		t.Errorf("facts = %q", got)
	}
	if dump := f.facts.dump(t); strings.Contains(dump, "tok-") || strings.Contains(dump, "s-1") {
		t.Errorf("facts carry session values: %s", dump)
	}
	if _, err := inst.Invoke(context.Background(), act, f.call(nil)); !errors.Is(err, runtime.ErrUnrecoverable) {
		t.Errorf("Invoke after Teardown: err = %v, want unrecoverable", err)
	}
}

func TestSessionCreateFailureIsUnrecoverable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(*fixture, map[string]any)
	}{
		{"status 500", func(f *fixture, _ map[string]any) { f.srv.createStatus = http.StatusInternalServerError }},
		{"status 401", func(f *fixture, _ map[string]any) { f.srv.createStatus = http.StatusUnauthorized }},
		{"extract without a match", func(_ *fixture, shared map[string]any) {
			shared["extract"] = map[string]any{"id": "$.session.id", "token": "$.session.nope"}
		}},
		{"unreachable", func(f *fixture, _ map[string]any) { f.srv.Close() }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			shared := map[string]any{}
			for k, v := range sharedBlock {
				shared[k] = v
			}
			f := newFixture(t, nil)
			tc.setup(f, shared)
			f.in.Action = prepare(t, runBlock, shared)
			inst, err := Backend{}.Initialize(context.Background(), f.in)
			if !errors.Is(err, runtime.ErrUnrecoverable) || inst != nil {
				t.Fatalf("Initialize = %v, %v; want unrecoverable", inst, err)
			}
			if httpspec.Recoverable(err) != nil {
				t.Errorf("err %v also reads as recoverable", err)
			}
			if strings.Contains(err.Error(), "tok-") {
				t.Errorf("err %q carries a session value", err)
			}
			if len(f.state.records(t)) != 0 || slices.Contains(f.facts.names(), "session.created") {
				t.Error("a failed session was recorded")
			}
		})
	}
}

func TestSessionOwnCreatedLazilyOnce(t *testing.T) {
	t.Parallel()
	shared := prepare(t, runBlock, sharedBlock)
	own := prepare(t, ownBlock(), sharedBlock)
	f := newFixture(t, shared)
	f.srv.createDelay = 50 * time.Millisecond
	inst, err := Backend{}.Initialize(context.Background(), f.in)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	outputs := make([]any, 16)
	for i := range outputs {
		wg.Go(func() {
			res, err := inst.Invoke(context.Background(), own, f.call(map[string]any{"q": i}))
			if err != nil || res.Error != nil {
				t.Errorf("Invoke: %v %v", err, res)
				return
			}
			outputs[i] = res.Output
		})
	}
	wg.Wait()
	if n := f.srv.creates.Load(); n != 2 {
		t.Errorf("%d creates, want 2 (the shared session and the own one)", n)
	}
	for _, o := range outputs {
		if o != "s-2" {
			t.Fatalf("outputs = %v, want every call in session s-2", outputs)
		}
	}
	if res, err := inst.Invoke(context.Background(), shared, f.call(nil)); err != nil || res.Output != "s-1" {
		t.Errorf("shared action: %+v %v, want session s-1", res, err)
	}
	if err := inst.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	var destroys []string
	for _, op := range f.srv.snapshot() {
		if strings.HasPrefix(op, "destroy") {
			destroys = append(destroys, op)
		}
	}
	slices.Sort(destroys)
	if !slices.Equal(destroys, []string{"destroy s-1 tok-s-1", "destroy s-2 tok-s-2"}) {
		t.Errorf("destroys = %q", destroys)
	}
}

func TestSessionCancelledCreateIsRetried(t *testing.T) {
	t.Parallel()
	shared := prepare(t, runBlock, sharedBlock)
	own := prepare(t, ownBlock(), sharedBlock)
	f := newFixture(t, shared)
	inst, err := Backend{}.Initialize(context.Background(), f.in)
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Teardown(context.Background())
	f.srv.holdCreate = make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err = inst.Invoke(ctx, own, f.call(nil))
	if !errors.Is(err, context.Canceled) || errors.Is(err, runtime.ErrUnrecoverable) {
		t.Fatalf("cancelled create: err = %v, want a plain cancellation", err)
	}
	close(f.srv.holdCreate)
	res, err := inst.Invoke(context.Background(), own, f.call(nil))
	if err != nil || res.Error != nil || res.Output != "s-3" {
		t.Fatalf("retry: %+v %v, want session s-3", res, err)
	}
}

func TestTeardownWhileCreating(t *testing.T) {
	t.Parallel()
	shared := prepare(t, runBlock, sharedBlock)
	own := prepare(t, ownBlock(), sharedBlock)
	f := newFixture(t, shared)
	inst, err := Backend{}.Initialize(context.Background(), f.in)
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	f.srv.holdCreate = release
	done := make(chan error, 1)
	go func() {
		_, err := inst.Invoke(context.Background(), own, f.call(nil))
		done <- err
	}()
	for f.srv.creates.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := inst.Teardown(ctx); err == nil || !strings.Contains(err.Error(), "still being created") {
		t.Errorf("Teardown = %v, want the pending create reported", err)
	}
	close(release)
	if err := <-done; !errors.Is(err, runtime.ErrUnrecoverable) {
		t.Errorf("Invoke whose create outlived Teardown: err = %v, want unrecoverable", err)
	}
	want := []string{"destroy s-1 tok-s-1", "destroy s-2 tok-s-2"}
	var got []string
	for _, op := range f.srv.snapshot() {
		if strings.HasPrefix(op, "destroy") {
			got = append(got, op)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("destroys = %q, want %q", got, want)
	}
	if recs := f.state.records(t); len(recs) != 0 {
		t.Errorf("state = %+v, want empty", recs)
	}
}

func TestDestroyFailureIsReportedAndKept(t *testing.T) {
	t.Parallel()
	act := prepare(t, runBlock, sharedBlock)
	f := newFixture(t, act)
	f.srv.destroyStatus = http.StatusInternalServerError
	inst, err := Backend{}.Initialize(context.Background(), f.in)
	if err != nil {
		t.Fatal(err)
	}
	err = inst.Teardown(context.Background())
	if err == nil || !strings.Contains(err.Error(), "500") {
		t.Fatalf("Teardown = %v, want the destroy failure", err)
	}
	if recs := f.state.records(t); len(recs) != 1 {
		t.Errorf("state = %+v, want the session still recorded", recs)
	}
	names := f.facts.names()
	if !slices.Equal(names, []string{"session.created", "session.destroy_failed"}) {
		t.Fatalf("facts = %q", names)
	}
	if d := f.facts.data[1]; d["status"] != 500 || d["error"] != runtime.KindUnavailable {
		t.Errorf("destroy_failed fact = %v", d)
	}
	if again := inst.Teardown(context.Background()); again == nil {
		t.Error("second Teardown forgot the first result")
	}
	if n := strings.Count(strings.Join(f.srv.snapshot(), "\n"), "destroy"); n != 1 {
		t.Errorf("%d destroys, want 1", n)
	}
}

func TestRecordedSessionsAreDestroyed(t *testing.T) {
	t.Parallel()
	act := prepare(t, runBlock, sharedBlock)
	old, err := encodeState([]record{
		{Key: "stateful_session", CreatedAt: time.Now().UTC(), Values: map[string]any{"id": "old", "token": "tok-old"}},
		{Key: "actions[9].execute.stateful_session", Values: map[string]any{"id": "lost"}},
	})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("by DestroyRecorded", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, nil)
		_ = f.state.Save(context.Background(), old)
		err := DestroyRecorded(context.Background(), f.in, []runtime.Action{act})
		if err == nil || !strings.Contains(err.Error(), "actions[9]") {
			t.Errorf("DestroyRecorded = %v, want the unknown record reported", err)
		}
		if got := f.srv.snapshot(); !slices.Equal(got, []string{"destroy old tok-old"}) {
			t.Errorf("server saw %q", got)
		}
		if recs := f.state.records(t); len(recs) != 1 || recs[0].Key != "actions[9].execute.stateful_session" {
			t.Errorf("state = %+v, want only the unknown record", recs)
		}
	})

	t.Run("at Teardown", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, act)
		_ = f.state.Save(context.Background(), old)
		inst, err := Backend{}.Initialize(context.Background(), f.in)
		if err != nil {
			t.Fatal(err)
		}
		if recs := f.state.records(t); len(recs) != 3 {
			t.Errorf("state after create = %+v, want the new session and both old records", recs)
		}
		_ = inst.Teardown(context.Background())
		got := f.srv.snapshot()
		slices.Sort(got)
		if !slices.Equal(got, []string{"create", "destroy old tok-old", "destroy s-1 tok-s-1"}) {
			t.Errorf("server saw %q", got)
		}
	})
}
