package postgres_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// killManifest is the durable manifest without the session action, whose subscription is removed by its id
// alone: a channel whose subscribe reply a kill lost can still be removed (README, Guarantees).
var killManifest = strings.Replace(durable, `url: "{settings.base_url}/stop"
          json: {id: "{subscription.id}", resource: "{subscribe.resource}"}`, `url: "{settings.base_url}/stop-by-id"
          json: {id: "{subscription.id}"}`, 1)

// killIterations is how many hosts TestKillAtRandomPoints kills: TOOL_KILL_ITERATIONS, else 5 under -short, else
// 50.
func killIterations(t *testing.T) int { return envCount(t, "TOOL_KILL_ITERATIONS", 5, 50) }

// envCount is the positive count in the environment variable name, else short under -short, else full.
func envCount(t *testing.T, name string, short, full int) int {
	if s := os.Getenv(name); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q is not a positive count", name, s)
		}
		return n
	}
	if testing.Short() {
		return short
	}
	return full
}

// TestKillAtRandomPoints runs one task through a chain of host processes, each killed with SIGKILL at a random
// point after it started polling — mid-fetch, between a Sink's accept and the state write, mid-subscribe — and
// the next resuming the task. Then a last process resumes it and closes it. Every item published after the
// baseline fires at least once; an item that fires again carries the same Activation.ID, and each kill re-fires
// at most one item (the one in hand); no subscription channel is left registered after Close.
func TestKillAtRandomPoints(t *testing.T) {
	schema := newSchema(t)
	path := filepath.Join(t.TempDir(), "kill.yaml")
	if err := os.WriteFile(path, []byte(killManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	if killManifest == durable {
		t.Fatal("the unsubscribe of the durable manifest changed: update killManifest")
	}
	p, srv := newPlatform(t)
	p.publish("base") // the baseline
	n := killIterations(t)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	var hosts []*host
	var published []string
	start := func(i int, resume bool) *host {
		return startHost(t, schema, path, srv.URL, "tk", "k"+strconv.Itoa(i), resume, "-call-timeout", "300ms")
	}
	for i := range n {
		h := start(i, i > 0)
		hosts = append(hosts, h)
		replica := "k" + strconv.Itoa(i)
		if i == 0 { // the baseline must be recorded, or a later process baselines the items published meanwhile
			waitFor(t, "the baseline", func() bool { return len(h.facts("poll.fetched")) >= 1 })
		}
		items := []string{fmt.Sprintf("i%02da", i), fmt.Sprintf("i%02db", i)}
		p.publish(items...)
		published = append(published, items...)
		// Once this process fetches (the dead one's lease has run out), kill it within the next two polls.
		waitFor(t, replica+" to fetch", func() bool { f, _, _ := p.snapshot(); return f[replica] >= 1 })
		time.Sleep(time.Duration(rng.Int64N(int64(200 * time.Millisecond)))) // the random point, not a wait
		h.kill()
	}
	last := start(n, true)
	hosts = append(hosts, last)
	fired := func() map[string][]string { // item → activation ids, across every process
		out := map[string][]string{}
		for _, h := range hosts {
			for _, a := range h.activations() {
				out[a.item] = append(out[a.item], a.id)
			}
		}
		return out
	}
	waitFor(t, "every item to fire", func() bool {
		f := fired()
		return !slices.ContainsFunc(published, func(id string) bool { return len(f[id]) == 0 })
	})
	if ended := last.end(); ended != "<nil>" {
		t.Errorf("Close of the last task: %s", ended)
	}
	again := 0
	for item, ids := range fired() {
		if item == "base" {
			t.Errorf("the baseline item fired: %v", ids)
		}
		for _, id := range ids[1:] {
			again++
			if id != ids[0] {
				t.Errorf("item %s fired again with another Activation.ID: %v", item, ids)
			}
		}
	}
	if again > n {
		t.Errorf("%d re-fires after %d kills, want at most one per kill", again, n)
	}
	if _, _, channels := p.snapshot(); len(channels) != 0 {
		t.Errorf("channels left registered after %d kills and Close: %v", n, channels)
	}
	t.Logf("%d kills, %d items, %d re-fired with their Activation.ID", n, len(published), again)
}
