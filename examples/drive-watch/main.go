// Command drive-watch shows a subscription event end to end, offline: a task registers a push channel with a
// Drive-like service (subscribe), the service pushes a change to the host's webhook endpoint (a Router), the
// channel is renewed before it expires (make-before-break: the new channel first, then the old one removed), and
// closing the task removes the channel. The channel lives two seconds here so that the renewal shows; hosts keep
// the default of 24 hours.
package main

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/commonagents-go/tool"
)

//go:embed drive.yaml
var manifest []byte

// facts carries the names of the subscription facts the observer printed.
var facts = make(chan string, 16)

// wait waits for the fact named name.
func wait(name string) {
	timeout := time.After(10 * time.Second)
	for {
		select {
		case got := <-facts:
			if got == name {
				return
			}
		case <-timeout:
			log.Fatalf("no %s fact", name)
		}
	}
}

func main() {
	ctx := context.Background()
	router := tool.NewRouter(tool.RouterOptions{})
	mux := http.NewServeMux()
	router.Register(mux)
	host := httptest.NewServer(mux) // the host's public endpoint: runtime.api_root
	defer host.Close()
	drive := newDrive()
	api := httptest.NewServer(drive)
	defer api.Close()

	t, err := tool.Load(ctx, manifest,
		tool.WithSettings(map[string]any{"api": api.URL}),
		tool.WithRuntimeInfo(tool.RuntimeInfo{APIRoot: host.URL}),
		tool.WithLimits(tool.Limits{ChannelTTL: 2 * time.Second, RenewAt: 0.5}),
		tool.WithObserver(tool.ObserverFunc(func(_ context.Context, f tool.Fact) {
			switch f.Name {
			case "subscription.created", "subscription.renewed", "subscription.removed", "subscription.failed":
				fmt.Printf("  fact %-22s %v\n", f.Name, f.Data)
				facts <- f.Name
			}
		})))
	if err != nil {
		log.Fatal(err)
	}
	activations := make(chan tool.Activation, 4)
	task, err := t.NewTask(ctx, tool.TaskConfig{
		Capability: tool.Capability{Bindings: map[string]any{"document_id": "doc-42"}},
		Sink: tool.SinkFunc(func(_ context.Context, a tool.Activation) error {
			activations <- a
			return nil
		}),
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := router.Add(task); err != nil {
		log.Fatal(err)
	}

	fmt.Println("task started; the subscription registers in the background:")
	wait("subscription.created")
	fmt.Println("\nthe service pushes two changes; only the bound document wakes the task:")
	drive.push("doc-7", "ann@example.com", "retitled")
	drive.push("doc-42", "bob@example.com", "fixed a typo in section 2")
	a := <-activations
	fmt.Printf("  activation: %s\n", a.Message)

	fmt.Println("\nwaiting for the renewal at half the channel's life:")
	wait("subscription.renewed")
	wait("subscription.removed") // make-before-break: the old channel goes once the new one exists

	fmt.Println("\nclosing the task removes the channel:")
	if err := task.Close(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("\nchannels still registered with the service: %d\n", drive.live())
}

// drive is the fake service: it records channels and pushes changes to their addresses.
type drive struct {
	mu       sync.Mutex
	channels map[string]string // id → address
}

func newDrive() *drive { return &drive{channels: map[string]string{}} }

func (d *drive) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct{ ID, Address, ResourceID string }
	_ = json.NewDecoder(r.Body).Decode(&body)
	d.mu.Lock()
	defer d.mu.Unlock()
	switch r.URL.Path {
	case "/changes/watch":
		d.channels[body.ID] = body.Address
		json.NewEncoder(w).Encode(map[string]any{"kind": "api#channel", "id": body.ID, "resource_id": "res-" + body.ID[:6]})
	case "/channels/stop":
		delete(d.channels, body.ID)
		w.WriteHeader(http.StatusNoContent)
	default:
		http.NotFound(w, r)
	}
}

func (d *drive) live() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.channels)
}

// push sends a change notification to every registered channel.
func (d *drive) push(doc, editor, change string) {
	body, _ := json.Marshal(map[string]any{"document_id": doc, "editor_email": editor, "change": change})
	d.mu.Lock()
	var addrs []string
	for _, a := range d.channels {
		addrs = append(addrs, a)
	}
	d.mu.Unlock()
	for _, addr := range addrs {
		resp, err := http.Post(addr, "application/json", bytes.NewReader(body))
		if err != nil {
			log.Fatal(err)
		}
		resp.Body.Close()
		fmt.Printf("  push %s → HTTP %d\n", doc, resp.StatusCode)
	}
}
