package postgres_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
)

// durable is the manifest the replica processes run: a poll of a feed, a subscription, and a session action.
const durable = `kind: commonagents.info/v1beta2/tool
namespace: test
name: durable
description: Durable state across host processes.
settings:
  properties:
    base_url: {type: string}
parameters:
  properties:
    feed: {type: string, require_binding: true}
stateful_session:
  create:
    method: POST
    url: "{settings.base_url}/sessions"
  extract:
    id: "$.id"
  destroy:
    method: DELETE
    url: "{settings.base_url}/sessions/{session.id}"
actions:
  - name: note
    description: Writes a note in the session.
    parameters:
      properties:
        text: {type: string}
    execute:
      stateful_session:
        execute:
          method: POST
          url: "{settings.base_url}/sessions/{session.id}/notes"
          body: {text: "{parameters.text}"}
  - name: tag
    description: Tags the task.
    parameters:
      properties:
        label: {type: string}
    execute:
      cel:
        expression: "input.label"
events:
  - name: item
    description: A new feed item.
    message: "item {event.payload.id}"
    receive:
      poll:
        url: "{settings.base_url}/feed/{parameters.feed}?replica={runtime.version}"
        detect: "response.items"
        interval: 100ms
  - name: change
    description: A pushed change.
    message: "change"
    receive:
      subscription:
        subscribe:
          method: POST
          url: "{settings.base_url}/watch"
          json: {id: "{subscription.id}"}
        unsubscribe:
          method: POST
          url: "{settings.base_url}/stop"
          json: {id: "{subscription.id}", resource: "{subscribe.resource}"}
`

// platform is the service the manifest talks to: a feed whose items the test publishes, sessions and watch
// channels it records.
type platform struct {
	mu       sync.Mutex
	items    []any
	fetches  map[string]int // by replica
	sessions map[string]bool
	channels map[string]bool
	created  int
}

func newPlatform(t *testing.T) (*platform, *httptest.Server) {
	p := &platform{fetches: map[string]int{}, sessions: map[string]bool{}, channels: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /feed/{feed}", func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.fetches[r.URL.Query().Get("replica")]++
		json.NewEncoder(w).Encode(map[string]any{"items": p.items})
	})
	mux.HandleFunc("POST /sessions", func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.created++
		id := fmt.Sprintf("s%d", p.created)
		p.sessions[id] = true
		json.NewEncoder(w).Encode(map[string]any{"id": id})
	})
	mux.HandleFunc("POST /sessions/{id}/notes", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"ok": true})
	})
	mux.HandleFunc("DELETE /sessions/{id}", func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		defer p.mu.Unlock()
		delete(p.sessions, r.PathValue("id"))
	})
	mux.HandleFunc("POST /watch", func(w http.ResponseWriter, r *http.Request) {
		var body struct{ ID string }
		json.NewDecoder(r.Body).Decode(&body)
		p.mu.Lock()
		defer p.mu.Unlock()
		p.channels[body.ID] = true
		json.NewEncoder(w).Encode(map[string]any{"resource": "res-" + body.ID})
	})
	mux.HandleFunc("POST /stop-by-id", func(w http.ResponseWriter, r *http.Request) {
		var body struct{ ID string }
		json.NewDecoder(r.Body).Decode(&body)
		p.mu.Lock()
		defer p.mu.Unlock()
		if !p.channels[body.ID] {
			http.Error(w, "no such channel", http.StatusNotFound)
			return
		}
		delete(p.channels, body.ID)
	})
	mux.HandleFunc("POST /stop", func(w http.ResponseWriter, r *http.Request) {
		var body struct{ ID, Resource string }
		json.NewDecoder(r.Body).Decode(&body)
		p.mu.Lock()
		defer p.mu.Unlock()
		if body.Resource == "res-"+body.ID {
			delete(p.channels, body.ID)
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return p, srv
}

func (p *platform) publish(ids ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range ids {
		p.items = append(p.items, map[string]any{"id": id})
	}
}

func (p *platform) snapshot() (fetches map[string]int, sessions, channels []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fetches = map[string]int{}
	for k, v := range p.fetches {
		fetches[k] = v
	}
	for id := range p.sessions {
		sessions = append(sessions, id)
	}
	for id := range p.channels {
		channels = append(channels, id)
	}
	slices.Sort(sessions)
	slices.Sort(channels)
	return fetches, sessions, channels
}

var (
	replicaOnce sync.Once
	replicaBin  string
	replicaErr  error
)

// replicaProgram builds internal/replica once per test binary.
func replicaProgram(t *testing.T) string {
	t.Helper()
	replicaOnce.Do(func() {
		dir, err := os.MkdirTemp("", "replica")
		if err != nil {
			replicaErr = err
			return
		}
		replicaBin = filepath.Join(dir, "replica")
		out, err := exec.Command("go", "build", "-o", replicaBin, "./internal/replica").CombinedOutput()
		if err != nil {
			replicaErr = fmt.Errorf("build replica: %v\n%s", err, out)
		}
	})
	if replicaErr != nil {
		t.Fatal(replicaErr)
	}
	return replicaBin
}

// host is one running replica process.
type host struct {
	t     *testing.T
	cmd   *exec.Cmd
	stdin io.WriteCloser
	mu    sync.Mutex
	lines []map[string]any
	done  chan struct{}
}

// startHost runs a replica process for task id over schema.
func startHost(t *testing.T, schema, manifest, baseURL, id, replica string, resume bool, extra ...string) *host {
	t.Helper()
	args := []string{"-dsn", dsn(t), "-schema", schema, "-manifest", manifest, "-task", id, "-replica", replica,
		"-settings", `{"base_url":"` + baseURL + `"}`, "-bindings", `{"feed":"f1"}`}
	if resume {
		args = append(args, "-resume")
	}
	cmd := exec.Command(replicaProgram(t), append(args, extra...)...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &host{t: t, cmd: cmd, stdin: stdin, done: make(chan struct{})}
	go func() {
		defer close(h.done)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var line map[string]any
			if json.Unmarshal(sc.Bytes(), &line) == nil {
				h.mu.Lock()
				h.lines = append(h.lines, line)
				h.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { h.kill() })
	h.wait("ready", 1)
	return h
}

// wait waits until n lines have key; it fails the test after 20 s or when the process ends first.
func (h *host) wait(key string, n int) []map[string]any {
	h.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		h.mu.Lock()
		var got []map[string]any
		for _, l := range h.lines {
			if _, ok := l[key]; ok {
				got = append(got, l)
			}
			if e, ok := l["error"]; ok && e != nil && key != "error" {
				h.mu.Unlock()
				h.t.Fatalf("replica failed: %v", e)
			}
		}
		h.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-h.done:
			h.t.Fatalf("replica ended with %d %q lines, want %d", len(got), key, n)
		default:
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%d %q lines after 20s, want %d", len(got), key, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// activated returns the item ids the replica's Sink accepted.
func (h *host) activated() []string {
	var ids []string
	for _, a := range h.activations() {
		ids = append(ids, a.item)
	}
	return ids
}

// itemActivation is one activation of the poll event: the item's id and the Activation.ID.
type itemActivation struct{ item, id string }

func (h *host) activations() []itemActivation {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []itemActivation
	for _, l := range h.lines {
		if a, ok := l["activation"].(map[string]any); ok && a["event"] == "item" {
			out = append(out, itemActivation{fmt.Sprint(a["payload"].(map[string]any)["id"]), fmt.Sprint(a["id"])})
		}
	}
	return out
}

// facts returns the data of the replica's facts of that name.
func (h *host) facts(name string) []map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []map[string]any
	for _, l := range h.lines {
		if f, ok := l["fact"].(map[string]any); ok && f["name"] == name {
			data, _ := f["data"].(map[string]any)
			out = append(out, data)
		}
	}
	return out
}

// kill ends the process with SIGKILL: nothing of the task is cleaned up.
func (h *host) kill() {
	if h.cmd.ProcessState == nil {
		_ = h.cmd.Process.Signal(syscall.SIGKILL)
		_ = h.cmd.Wait()
	}
}

// end closes stdin, so the replica closes (or detaches) its task, and waits for the process.
func (h *host) end() string {
	h.t.Helper()
	h.stdin.Close()
	ended := h.wait("ended", 1)[0]["ended"]
	<-h.done
	_ = h.cmd.Wait()
	return fmt.Sprint(ended)
}

func writeManifest(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "durable.yaml")
	if err := os.WriteFile(path, []byte(durable), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// waitFor polls cond until it holds or 20 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestKillAndResume stops a host process with SIGKILL in the middle of a task, after its poll recorded the items
// it fired, and resumes the task in a new process: nothing in the task state is lost, no poll item fires twice,
// the session the first process created is destroyed when the resumed task closes, and no subscription is left
// registered. (A kill between a Sink's accept and the state write re-fires that item with the same
// Activation.ID: TestKillAtRandomPoints.)
func TestKillAndResume(t *testing.T) {
	schema, manifest := newSchema(t), writeManifest(t)
	p, srv := newPlatform(t)
	p.publish("a") // present before the task: the baseline
	first := startHost(t, schema, manifest, srv.URL, "t1", "r1", false,
		"-invoke", `note={"text":"hello"}`, "-invoke", `tag={"label":"urgent"}`)
	first.wait("result", 2)
	// The first fetch is the baseline: b and c come after it.
	waitFor(t, "the baseline fetch", func() bool { f, _, _ := p.snapshot(); return f["r1"] >= 1 })
	p.publish("b", "c")
	waitFor(t, "b and c to fire in the first process", func() bool { return len(first.activated()) >= 2 })
	// The Sink accepted b and c before the state recorded them: wait for the record, the poll.fetched fact of a
	// step that fired items (the kill lands after it).
	waitFor(t, "the first process to record b and c", func() bool {
		fired := 0
		for _, f := range first.facts("poll.fetched") {
			n, _ := f["fired"].(float64)
			fired += int(n)
		}
		return fired >= 2
	})
	_, sessions, channels := p.snapshot()
	if len(sessions) != 1 || len(channels) != 1 {
		t.Fatalf("before the kill: sessions %v, channels %v; want one of each", sessions, channels)
	}
	first.kill()

	p.publish("d")
	second := startHost(t, schema, manifest, srv.URL, "t1", "r2", true)
	waitFor(t, "d to fire in the resumed process", func() bool { return slices.Contains(second.activated(), "d") })
	seen, _, _ := p.snapshot()
	waitFor(t, "three more polls", func() bool { f, _, _ := p.snapshot(); return f["r2"] >= seen["r2"]+3 }) // nothing may fire again
	all := append(first.activated(), second.activated()...)
	slices.Sort(all)
	if want := []string{"b", "c", "d"}; !slices.Equal(all, want) {
		t.Errorf("items fired across both processes: %v, want %v (once each, the baseline never)", all, want)
	}
	if ended := second.end(); ended != "<nil>" {
		t.Errorf("Close of the resumed task: %s", ended)
	}
	_, sessions, channels = p.snapshot()
	if len(sessions) != 0 {
		t.Errorf("sessions left after the resumed task closed: %v (the first process created them)", sessions)
	}
	if len(channels) != 0 {
		t.Errorf("subscription channels left registered: %v", channels)
	}
	// Close removed the task's state: resuming it again is an error.
	third := exec.Command(replicaProgram(t), "-dsn", dsn(t), "-schema", schema, "-manifest", manifest, "-task", "t1",
		"-replica", "r3", "-resume", "-settings", `{"base_url":"`+srv.URL+`"}`, "-bindings", `{"feed":"f1"}`)
	out, err := third.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "holds no task") {
		t.Errorf("resume of a closed task: %v\n%s", err, out)
	}
}

// TestResumeKeepsTheAllowList resumes a killed task and checks its allow list through the stored state.
func TestResumeKeepsTheAllowList(t *testing.T) {
	schema, manifest := newSchema(t), writeManifest(t)
	_, srv := newPlatform(t)
	first := startHost(t, schema, manifest, srv.URL, "t2", "r1", false, "-invoke", `tag={"label":"urgent"}`)
	first.wait("result", 1)
	first.kill()
	store := open(t, schema)
	tl, err := tool.Load(t.Context(), []byte(durable), tool.WithStore(store), tool.WithReplicaID("r2"),
		tool.WithSettings(map[string]any{"base_url": srv.URL}))
	if err != nil {
		t.Fatal(err)
	}
	task, err := tl.RestoreTask(t.Context(), tool.TaskConfig{ID: "t2", Capability: tool.Capability{
		Bindings: map[string]any{"feed": "f1"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer task.Close(t.Context())
	if got := fmt.Sprint(task.AllowList()); got != "map[feed:[f1] label:[urgent]]" {
		t.Errorf("resumed allow list = %s", got)
	}
}

// TestReplicasShareOnePollLoop runs the same task in two host processes over one database: only one of them
// polls at a time, and the other takes over when the first is killed.
func TestReplicasShareOnePollLoop(t *testing.T) {
	schema, manifest := newSchema(t), writeManifest(t)
	p, srv := newPlatform(t)
	a := startHost(t, schema, manifest, srv.URL, "t3", "ra", false)
	waitFor(t, "ra to poll", func() bool { f, _, _ := p.snapshot(); return f["ra"] >= 2 })
	b := startHost(t, schema, manifest, srv.URL, "t3", "rb", true)
	started, _, _ := p.snapshot()
	// rb tries every interval too; over ten of ra's polls, rb must not fetch once.
	waitFor(t, "ten more polls by ra", func() bool { f, _, _ := p.snapshot(); return f["ra"] >= started["ra"]+10 })
	fetches, _, _ := p.snapshot()
	if fetches["rb"] != 0 {
		t.Fatalf("fetches while ra holds the lease: %v, want ra only", fetches)
	}
	p.publish("x")
	waitFor(t, "x to fire", func() bool { return len(a.activated())+len(b.activated()) >= 1 })
	a.kill()
	killed, _, _ := p.snapshot() // kill waited for the process: ra cannot fetch any more
	waitFor(t, "rb to take over", func() bool { f, _, _ := p.snapshot(); return f["rb"] >= 3 })
	fetches, _, _ = p.snapshot()
	if fetches["ra"] != killed["ra"] {
		t.Errorf("ra fetched after it was killed: %v", fetches)
	}
	p.publish("y")
	waitFor(t, "y to fire at rb", func() bool { return slices.Contains(b.activated(), "y") })
	all := append(a.activated(), b.activated()...)
	slices.Sort(all)
	if want := []string{"x", "y"}; !slices.Equal(all, want) {
		t.Errorf("items fired across the replicas: %v, want %v", all, want)
	}
	b.end()
}

// TestConcurrentAllowListGrowth grows one task's allow list from two replicas at once: no value is lost.
func TestConcurrentAllowListGrowth(t *testing.T) {
	schema := newSchema(t)
	_, srv := newPlatform(t)
	ctx := t.Context()
	replica := func(id string) *tool.Tool {
		tl, err := tool.Load(ctx, []byte(durable), tool.WithStore(open(t, schema)), tool.WithReplicaID(id),
			tool.WithSettings(map[string]any{"base_url": srv.URL}))
		if err != nil {
			t.Fatal(err)
		}
		return tl
	}
	cfg := tool.TaskConfig{ID: "t4", Capability: tool.Capability{Bindings: map[string]any{"feed": "f1"}}}
	a, err := replica("ra").NewTask(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Detach(ctx)
	b, err := replica("rb").RestoreTask(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Detach(ctx)
	var wg sync.WaitGroup
	for r, task := range map[string]*tool.Task{"a": a, "b": b} {
		for i := range 25 {
			wg.Go(func() {
				if _, err := task.Invoke(ctx, "tag", map[string]any{"label": fmt.Sprintf("%s%02d", r, i)}); err != nil {
					t.Error(err)
				}
			})
		}
	}
	wg.Wait()
	third, err := replica("rc").RestoreTask(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer third.Detach(ctx)
	if got := len(third.AllowList()["label"]); got != 50 {
		t.Errorf("%d labels stored after 50 concurrent calls on two replicas, want 50", got)
	}
}
