// Command feed-poll shows a poll event end to end, offline: a task fetches a feed every 300 ms (hosts keep the
// default of a minute), the first fetch records what is already there without firing, and each post published
// afterwards becomes one message for the agent — once, although it stays in the feed — while drafts are filtered
// out.
package main

import (
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

//go:embed feed.yaml
var manifest []byte

func main() {
	ctx := context.Background()
	feed := &feed{}
	feed.publish("Old news", false)
	api := httptest.NewServer(feed)
	defer api.Close()

	t, err := tool.Load(ctx, manifest, tool.WithSettings(map[string]any{"api": api.URL}),
		tool.WithObserver(tool.ObserverFunc(func(_ context.Context, f tool.Fact) {
			if f.Name == "poll.fetched" || f.Name == "poll.failed" {
				fmt.Printf("  fact %-12s %v\n", f.Name, f.Data)
			}
		})))
	if err != nil {
		log.Fatal(err)
	}
	messages := make(chan string, 8)
	task, err := t.NewTask(ctx, tool.TaskConfig{
		Capability: tool.Capability{Bindings: map[string]any{"feed_id": "tech"}},
		Sink: tool.SinkFunc(func(_ context.Context, a tool.Activation) error {
			messages <- a.Message
			return nil
		}),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer task.Close(ctx)

	fmt.Println("the first fetch is the baseline: \"Old news\" does not fire")
	time.Sleep(450 * time.Millisecond)
	fmt.Println("\ntwo posts and a draft are published:")
	feed.publish("Go 1.27 released", false)
	feed.publish("Unfinished thoughts", true)
	feed.publish("Agents in production", false)
	for range 2 {
		select {
		case m := <-messages:
			fmt.Printf("  message: %s\n", m)
		case <-time.After(5 * time.Second):
			log.Fatal("no message")
		}
	}
	fmt.Println("\nthe posts stay in the feed; later fetches fire nothing:")
	time.Sleep(700 * time.Millisecond)
	select {
	case m := <-messages:
		log.Fatalf("fired again: %s", m)
	default:
	}
}

// feed is the fake feed service.
type feed struct {
	mu    sync.Mutex
	items []map[string]any
}

func (f *feed) publish(title string, draft bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.items) + 1
	f.items = append(f.items, map[string]any{"id": fmt.Sprint(n), "title": title, "draft": draft,
		"url": fmt.Sprintf("https://news.example/p/%d", n), "published_at": time.Now().UTC().Format(time.RFC3339)})
}

func (f *feed) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/feeds/tech/items" {
		http.NotFound(w, r)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"items": f.items})
}
