package kubernetesjob_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/internal/leakcheck"
	"github.com/commonagents-go/tool/runtime"
	"github.com/commonagents-go/tool/runtime/kubernetesjob"
	"github.com/commonagents-go/tool/runtime/kubernetesjob/kubernetesjobtest"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
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
	// The API server answers no DELETE until release, after the test: Teardown returns only by honouring its
	// deadline. The watchdog is far above any load's delay, and only turns a hang into a failure.
	done := make(chan error, 1)
	go func() { done <- inst.Teardown(ctx) }()
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatal("Teardown did not return at its 300ms deadline while the API server hung")
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
