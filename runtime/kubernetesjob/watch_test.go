package kubernetesjob_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/internal/leakcheck"
	"github.com/commonagents-go/tool/runtime/kubernetesjob"
	"github.com/commonagents-go/tool/runtime/kubernetesjob/kubernetesjobtest"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"
)

// R2: a watch the cluster refuses (RBAC without the watch verb, expired credentials) ends the call as an
// unrecoverable error; a watch that keeps failing for a transient reason is still bounded by the pending deadline.
func TestWatchFailureIsBounded(t *testing.T) {
	leakcheck.Check(t)
	gr := schema.GroupResource{Group: "batch", Resource: "jobs"}
	tests := []struct {
		name          string
		err           error
		unrecoverable bool
		kind          string // the result's error kind when recoverable
	}{
		{"forbidden", apierrors.NewForbidden(gr, "", errors.New(`User "agent" cannot watch jobs`)), true, ""},
		{"unauthorized", apierrors.NewUnauthorized("token expired"), true, ""},
		{"service unavailable until the pending deadline", apierrors.NewServiceUnavailable("etcd is busy"), false,
			"invalid_request"},
		{"network error until the pending deadline", errors.New("dial tcp: connection refused"), false, "invalid_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, &kubernetesjob.Backend{PendingTimeout: 100 * time.Millisecond},
				always(kubernetesjobtest.Outcome{Pending: "ImagePullBackOff"}))
			e.cluster.Client.PrependWatchReactor("jobs", func(a k8stesting.Action) (bool, watch.Interface, error) {
				if !callWatch(a) {
					return false, nil, nil
				}
				return true, nil, tt.err
			})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			res, err := e.task.Invoke(ctx, "render_report", args)
			if ctx.Err() != nil {
				t.Fatalf("the call ran until the caller's deadline (res %+v, err %v)", res, err)
			}
			if tt.unrecoverable {
				if !errors.Is(err, tool.ErrUnrecoverable) {
					t.Fatalf("err = %v, res %+v; want an unrecoverable error", err, res)
				}
				return
			}
			if err != nil || !res.IsError || res.Error.Kind != tt.kind {
				t.Fatalf("err %v, result %+v; want a %s result", err, res, tt.kind)
			}
		})
	}
}

// R3: a watch that ends at once (a proxy cutting long requests) is reopened with a back-off, not in a tight loop.
func TestWatchResumeBacksOff(t *testing.T) {
	leakcheck.Check(t)
	hold := make(chan struct{})
	e := newEnv(t, &kubernetesjob.Backend{}, always(kubernetesjobtest.Outcome{Hold: hold, Logs: "done"}))
	var watches atomic.Int64
	e.cluster.Client.PrependWatchReactor("jobs", func(a k8stesting.Action) (bool, watch.Interface, error) {
		if !callWatch(a) {
			return false, nil, nil
		}
		watches.Add(1)
		w := watch.NewFake()
		w.Stop() // the watch ends at once
		return true, w, nil
	})
	released := make(chan struct{})
	go func() {
		defer close(released)
		<-e.cluster.Running()
		time.Sleep(500 * time.Millisecond) // the span over which watches are counted, not synchronisation
		close(hold)
	}()
	res, err := e.task.Invoke(context.Background(), "render_report", args)
	<-released
	if err != nil || res.IsError {
		t.Fatal(err, res)
	}
	if res.Output != "done" {
		t.Errorf("output %v, want done", res.Output)
	}
	// Back-off from 100ms doubling: about 4 watches in half a second (a tight loop opens thousands).
	if n := watches.Load(); n > 10 || n < 2 {
		t.Errorf("%d watches opened in about half a second, want 2 to 10", n)
	}
}

// memState is a task state slot in memory.
type memState struct{ data []byte }

func (s *memState) Load(context.Context) ([]byte, error) { return s.data, nil }

func (s *memState) Save(_ context.Context, v []byte) error { s.data = v; return nil }

// R5: a large activeDeadlineSeconds (meaning "no real deadline") must not overflow the call's backstop.
func TestLargeActiveDeadlineDoesNotOverflowTheBackstop(t *testing.T) {
	leakcheck.Check(t)
	c := kubernetesjobtest.NewCluster(always(kubernetesjobtest.Outcome{Logs: "ok"}))
	t.Cleanup(c.Close)
	for _, secs := range []string{"10000000000", "9223372036854775807"} {
		t.Run(secs, func(t *testing.T) {
			m := strings.Replace(manifest, "        spec:\n          template:",
				"        spec:\n          activeDeadlineSeconds: "+secs+"\n          template:", 1)
			tl, err := tool.Load(context.Background(), []byte(m), tool.WithSettings(settings),
				tool.WithRuntimes((&kubernetesjob.Backend{Client: c.Client}).Registry(nil)))
			if err != nil {
				t.Fatal(err)
			}
			task, err := tl.NewTask(context.Background(), tool.TaskConfig{})
			if err != nil {
				t.Fatal(err)
			}
			defer task.Close(context.Background())
			res, err := task.Invoke(context.Background(), "render_report", args)
			if err != nil {
				t.Fatal(err)
			}
			created := c.Created()
			if got, want := *created[len(created)-1].Spec.ActiveDeadlineSeconds, mustInt(t, secs); got != want {
				t.Fatalf("activeDeadlineSeconds = %d, want %s", got, secs)
			}
			if res.IsError {
				t.Errorf("call failed: %s: %s", res.Error.Kind, res.Error.Message)
			}
		})
	}
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
