package kubernetesjob_test

// Regression tests for the review of the merged backend (R1–R5 and clip).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/internal/leakcheck"
	"github.com/commonagents-go/tool/runtime"
	"github.com/commonagents-go/tool/runtime/kubernetesjob"
	"github.com/commonagents-go/tool/runtime/kubernetesjob/kubernetesjobtest"
)

// callWatch reports whether a watch action is the backend's (by field selector), not the fake controller's.
func callWatch(a k8stesting.Action) bool {
	return !a.(k8stesting.WatchAction).GetWatchRestrictions().Fields.Empty()
}

// R1: two tools run by tasks with the same ID (task state is keyed by tool): closing one tool's task must not
// delete the other tool's running Job.
func TestTeardownSparesOtherToolsJobs(t *testing.T) {
	leakcheck.Check(t)
	hold := make(chan struct{})
	c := kubernetesjobtest.NewCluster(func(j *batchv1.Job) kubernetesjobtest.Outcome {
		if j.Labels[kubernetesjob.LabelTool] == "other" {
			return kubernetesjobtest.Outcome{Hold: hold, Logs: "other done"}
		}
		return kubernetesjobtest.Outcome{Logs: "ok"}
	})
	t.Cleanup(c.Close)
	b := &kubernetesjob.Backend{Client: c.Client}
	load := func(m string) *tool.Task {
		tl, err := tool.Load(context.Background(), []byte(m), tool.WithSettings(settings), tool.WithRuntimes(b.Registry(nil)))
		if err != nil {
			t.Fatal(err)
		}
		task, err := tl.NewTask(context.Background(), tool.TaskConfig{ID: "task-1"})
		if err != nil {
			t.Fatal(err)
		}
		return task
	}
	reports := load(manifest)
	other := load(strings.Replace(manifest, "name: reports", "name: other", 1))

	done := make(chan *tool.Result, 1)
	go func() {
		res, _ := other.Invoke(context.Background(), "render_report", args)
		done <- res
	}()
	otherJob := <-c.Running()
	if res, err := reports.Invoke(context.Background(), "render_report", args); err != nil || res.IsError {
		t.Fatal(err, res)
	}
	if err := reports.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !c.Exists("agent-jobs", otherJob) {
		t.Errorf("closing tool reports' task deleted tool other's running Job %s; deletions %v", otherJob, c.Deleted())
	}
	select {
	case res := <-done:
		t.Errorf("tool other's call ended when tool reports' task closed: %+v", res)
	default:
	}
	close(hold)
	if res := <-done; res == nil || res.IsError || res.Output != "other done" {
		t.Errorf("tool other's call: %+v", res)
	}
	if err := other.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

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

func (s *memState) Load(context.Context) ([]byte, error)   { return s.data, nil }
func (s *memState) Save(_ context.Context, v []byte) error { s.data = v; return nil }

// R4: Teardown ends within its ctx even when the API server hangs, and deletes the Jobs in parallel.
func TestTeardownHonoursItsDeadline(t *testing.T) {
	list := batchv1.JobList{TypeMeta: metav1.TypeMeta{Kind: "JobList", APIVersion: "batch/v1"}}
	for _, n := range []string{"a", "b", "c", "d"} {
		list.Items = append(list.Items, batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: "ns"}})
	}
	var deletes atomic.Int32
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(list)
		case http.MethodDelete: // a hung API server
			deletes.Add(1)
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}
	}))
	defer srv.Close()
	defer close(release)
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	b := &kubernetesjob.Backend{Client: client}
	inst, err := b.Initialize(context.Background(), &runtime.Init{TaskID: "t", Tool: "x",
		State: &memState{data: []byte(`{"namespaces":["ns"]}`)}, Limits: runtime.Limits{TeardownTimeout: 300 * time.Millisecond},
		Observe: func(context.Context, string, map[string]any) {}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = inst.Teardown(ctx)
	if d := time.Since(start); d > 800*time.Millisecond {
		t.Errorf("Teardown took %s with a 300ms deadline", d.Round(time.Millisecond))
	}
	if err == nil {
		t.Error("Teardown reported no error though no delete succeeded")
	}
	// Sequential deletes would send one (it hangs until the deadline); parallel ones send them all. At least two
	// shows the parallelism without depending on how fast a loaded machine starts four requests.
	if n := deletes.Load(); n < 2 {
		t.Errorf("%d deletes reached the server before the deadline, want them in parallel (4)", n)
	}
}

// R5: a large activeDeadlineSeconds (meaning "no real deadline") must not overflow the call's backstop.
func TestLargeActiveDeadline(t *testing.T) {
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

// clip cuts on a UTF-8 boundary: a long multi-byte termination message quoted in a failure stays valid UTF-8.
func TestFailureMessageStaysUTF8(t *testing.T) {
	leakcheck.Check(t)
	e := newEnv(t, &kubernetesjob.Backend{LogTailBytes: 101},
		always(kubernetesjobtest.Outcome{ExitCode: 1, Message: strings.Repeat("é", 200)}))
	res, err := e.task.Invoke(context.Background(), "render_report", args)
	if err != nil || !res.IsError {
		t.Fatal(err, res)
	}
	if !strings.Contains(res.Error.Message, "éé…") {
		t.Errorf("message does not quote the clipped termination message: %q", res.Error.Message)
	}
	if !utf8.ValidString(res.Error.Message) {
		t.Errorf("message is not valid UTF-8: %q", res.Error.Message)
	}
}

// R2: a create the cluster does not answer within the request timeout is a recoverable unavailable error, and
// the Job it may have made is found by its task, tool and call labels and deleted.
func TestCreateTimesOut(t *testing.T) {
	leakcheck.Check(t)
	e := newEnv(t, &kubernetesjob.Backend{RequestTimeout: 50 * time.Millisecond}, always(kubernetesjobtest.Outcome{}))
	gvr := batchv1.SchemeGroupVersion.WithResource("jobs")
	e.cluster.Client.PrependReactor("create", "jobs", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		job := a.(k8stesting.CreateAction).GetObject().(*batchv1.Job).DeepCopy()
		job.Name = job.GenerateName + "slow"
		if err := e.cluster.Client.Tracker().Create(gvr, job, job.Namespace); err != nil {
			return true, nil, err
		}
		time.Sleep(150 * time.Millisecond) // a slow API server: the answer comes after the request timeout
		return true, nil, fmt.Errorf("client rate limiter: %w", context.DeadlineExceeded)
	})
	res, err := e.task.Invoke(context.Background(), "render_report", args)
	if err != nil || !res.IsError || res.Error.Kind != "unavailable" {
		t.Fatalf("err %v, result %+v; want an unavailable result", err, res)
	}
	if e.cluster.Exists("agent-jobs", "render-report-slow") {
		t.Errorf("the Job of the timed-out create still exists; deletions %v", e.cluster.Deleted())
	}
}
