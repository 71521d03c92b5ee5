package kubernetesjob_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/internal/leakcheck"
	"github.com/commonagents-go/tool/runtime/kubernetesjob"
	"github.com/commonagents-go/tool/runtime/kubernetesjob/kubernetesjobtest"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"
)

const manifest = `
kind: commonagents.info/v1beta2/tool
namespace: test
name: reports
description: Renders reports in Kubernetes Jobs.
settings:
  type: object
  properties:
    registry: {type: string}
    token: {type: string, format: password}
actions:
  - name: render_report
    description: Renders a report.
    parameters:
      type: object
      properties:
        tag: {type: string}
        input: {type: string}
        cpu: {type: string, default: 500m}
        namespace: {type: string, default: agent-jobs}
    execute:
      kubernetes_job:
        namespace: "{parameters.namespace}"
        spec:
          template:
            metadata:
              labels: {team: docs}
            spec:
              containers:
                - name: main
                  image: "{settings.registry}/report:{parameters.tag}"
                  args: ["--input", "{parameters.input}", "--count", "3"]
                  env:
                    - {name: TOKEN, value: "{settings.token}"}
                  resources:
                    limits: {cpu: "{parameters.cpu}", memory: 64Mi}
`

var settings = map[string]any{"registry": "registry.example", "token": "s3cret-token"}

// env is one task of the reports tool on a fake cluster.
type env struct {
	cluster *kubernetesjobtest.Cluster
	tool    *tool.Tool
	task    *tool.Task
}

func newEnv(t *testing.T, b *kubernetesjob.Backend, script func(*batchv1.Job) kubernetesjobtest.Outcome) *env {
	t.Helper()
	c := kubernetesjobtest.NewCluster(script)
	t.Cleanup(c.Close)
	b.Client = c.Client
	tl, err := tool.Load(context.Background(), []byte(manifest), tool.WithSettings(settings),
		tool.WithRuntimes(b.Registry(nil)))
	if err != nil {
		t.Fatal(err)
	}
	task, err := tl.NewTask(context.Background(), tool.TaskConfig{ID: "task-1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = task.Close(context.Background()) })
	return &env{cluster: c, tool: tl, task: task}
}

func always(o kubernetesjobtest.Outcome) func(*batchv1.Job) kubernetesjobtest.Outcome {
	return func(*batchv1.Job) kubernetesjobtest.Outcome { return o }
}

var args = map[string]any{"tag": "v2", "input": "q3.csv"}

func TestInvoke(t *testing.T) {
	leakcheck.Check(t)
	tests := []struct {
		name    string
		outcome kubernetesjobtest.Outcome
		output  any
		source  string
		kind    string   // error kind; "" for success
		message []string // substrings of the error message
	}{
		{name: "termination message is JSON", outcome: kubernetesjobtest.Outcome{Message: `{"pages": 3}`, Logs: "not this"},
			output: map[string]any{"pages": json.Number("3")}, source: "termination_message"},
		{name: "log is text", outcome: kubernetesjobtest.Outcome{Logs: "report ready\n"},
			output: "report ready", source: "log"},
		{name: "log is JSON", outcome: kubernetesjobtest.Outcome{Logs: "[1, \"two\"]\n"},
			output: []any{json.Number("1"), "two"}, source: "log"},
		{name: "exit code not zero", outcome: kubernetesjobtest.Outcome{ExitCode: 3, Logs: "starting\nboom: bad input\n"},
			kind: "tool_error", message: []string{"BackoffLimitExceeded", "exited with code 3", "boom: bad input"}},
		{name: "deadline exceeded", outcome: kubernetesjobtest.Outcome{DeadlineExceeded: true, Logs: "still working"},
			kind: "timeout", message: []string{"DeadlineExceeded", "still working"}},
		{name: "image pull back-off", outcome: kubernetesjobtest.Outcome{Pending: "ImagePullBackOff"},
			kind: "invalid_request", message: []string{"Pending", "ImagePullBackOff"}},
		{name: "unschedulable", outcome: kubernetesjobtest.Outcome{Pending: "Unschedulable"},
			kind: "unavailable", message: []string{"Pending", "Unschedulable", "Insufficient cpu"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A short pending bound only where the pod never leaves Pending: elsewhere the fake cluster's goroutine
			// moves the pod on, which can take longer than 100 ms on a loaded machine.
			pending := time.Minute
			if tt.outcome.Pending != "" {
				pending = 100 * time.Millisecond
			}
			e := newEnv(t, &kubernetesjob.Backend{Namespaces: []string{"agent-jobs"}, PendingTimeout: pending},
				always(tt.outcome))
			res, err := e.task.Invoke(context.Background(), "render_report", args)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.kind == "" && res.IsError:
				t.Fatalf("error %s: %s", res.Error.Kind, res.Error.Message)
			case tt.kind == "" && !reflect.DeepEqual(res.Output, tt.output):
				t.Errorf("output = %#v, want %#v", res.Output, tt.output)
			case tt.kind == "" && res.ServerData["source"] != tt.source:
				t.Errorf("source = %v, want %s", res.ServerData["source"], tt.source)
			case tt.kind != "" && !res.IsError:
				t.Fatalf("no error; output %#v", res.Output)
			case tt.kind != "" && res.Error.Kind != tt.kind:
				t.Errorf("kind = %s, want %s (%s)", res.Error.Kind, tt.kind, res.Error.Message)
			}
			for _, s := range tt.message {
				if !strings.Contains(res.Error.Message, s) {
					t.Errorf("message %q lacks %q", res.Error.Message, s)
				}
			}
			jobs := e.cluster.Created()
			if len(jobs) != 1 {
				t.Fatalf("%d Jobs created, want 1", len(jobs))
			}
			checkJob(t, jobs[0], res.CallID)
			if got := e.cluster.Deleted(); !slices.Equal(got, []kubernetesjobtest.Deletion{{Namespace: "agent-jobs",
				Name: jobs[0].Name, Propagation: metav1.DeletePropagationBackground}}) {
				t.Errorf("deletions = %v, want one background deletion of %s", got, jobs[0].Name)
			}
			if e.cluster.Exists("agent-jobs", jobs[0].Name) {
				t.Errorf("Job %s still exists", jobs[0].Name)
			}
		})
	}
}

// checkJob asserts the Job the backend sent: interpolated fields, labels, annotations and defaults.
func checkJob(t *testing.T, j *batchv1.Job, callID string) {
	t.Helper()
	if j.Namespace != "agent-jobs" || j.GenerateName != "render-report-" {
		t.Errorf("namespace %q, generateName %q", j.Namespace, j.GenerateName)
	}
	want := map[string]string{
		"app.kubernetes.io/managed-by": "commonagents-go-tool", "tool.commonagents.info/task": "task-1",
		"tool.commonagents.info/tool": "reports", "tool.commonagents.info/tool-namespace": "test",
		"tool.commonagents.info/action": "render_report",
		"tool.commonagents.info/call":   callID,
	}
	if !reflect.DeepEqual(j.Labels, want) {
		t.Errorf("labels = %v, want %v", j.Labels, want)
	}
	podLabels := map[string]string{"team": "docs"}
	for k, v := range want {
		podLabels[k] = v
	}
	if !reflect.DeepEqual(j.Spec.Template.Labels, podLabels) {
		t.Errorf("pod labels = %v, want %v", j.Spec.Template.Labels, podLabels)
	}
	if j.Annotations["tool.commonagents.info/call"] != callID {
		t.Errorf("annotations = %v", j.Annotations)
	}
	s := j.Spec
	if s.BackoffLimit == nil || *s.BackoffLimit != 0 || s.ActiveDeadlineSeconds == nil || *s.ActiveDeadlineSeconds != 600 ||
		s.TTLSecondsAfterFinished == nil || *s.TTLSecondsAfterFinished != 3600 || s.Template.Spec.RestartPolicy != "Never" {
		t.Errorf("defaults: backoffLimit %v, activeDeadlineSeconds %v, ttl %v, restartPolicy %q", s.BackoffLimit,
			s.ActiveDeadlineSeconds, s.TTLSecondsAfterFinished, s.Template.Spec.RestartPolicy)
	}
	c := s.Template.Spec.Containers[0]
	if c.Image != "registry.example/report:v2" || !slices.Equal(c.Args, []string{"--input", "q3.csv", "--count", "3"}) ||
		len(c.Env) != 1 || c.Env[0].Value != "s3cret-token" {
		t.Errorf("container: image %q, args %q, env %v", c.Image, c.Args, c.Env)
	}
	if cpu := c.Resources.Limits.Cpu().String(); cpu != "500m" {
		t.Errorf("cpu limit = %s", cpu)
	}
}

func TestBackendOptions(t *testing.T) {
	leakcheck.Check(t)
	limit := int32(2)
	e := newEnv(t, &kubernetesjob.Backend{Keep: true, BackoffLimit: &limit, ActiveDeadline: time.Minute,
		TTLAfterFinished: 2 * time.Minute}, always(kubernetesjobtest.Outcome{Logs: "ok"}))
	res, err := e.task.Invoke(context.Background(), "render_report",
		map[string]any{"tag": "v1", "input": "x", "namespace": "elsewhere"})
	if err != nil || res.IsError {
		t.Fatal(err, res.Error)
	}
	j := e.cluster.Created()[0]
	if j.Namespace != "elsewhere" || *j.Spec.BackoffLimit != 2 || *j.Spec.ActiveDeadlineSeconds != 60 ||
		*j.Spec.TTLSecondsAfterFinished != 120 {
		t.Errorf("namespace %s, backoffLimit %d, activeDeadlineSeconds %d, ttl %d", j.Namespace, *j.Spec.BackoffLimit,
			*j.Spec.ActiveDeadlineSeconds, *j.Spec.TTLSecondsAfterFinished)
	}
	if res.ServerData["kept"] != true || !e.cluster.Exists("elsewhere", j.Name) || len(e.cluster.Deleted()) != 0 {
		t.Errorf("kept Job: server data %v, exists %v, deletions %v", res.ServerData,
			e.cluster.Exists("elsewhere", j.Name), e.cluster.Deleted())
	}
	// Close leaves finished Jobs to their TTL when the backend keeps Jobs.
	if err := e.task.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !e.cluster.Exists("elsewhere", j.Name) {
		t.Error("Close deleted a finished Job the backend keeps")
	}
}

func TestInvalidArguments(t *testing.T) {
	leakcheck.Check(t)
	tests := []struct {
		name string
		args map[string]any
		kind string
	}{
		{"namespace not allowed", map[string]any{"tag": "v1", "input": "x", "namespace": "kube-system"}, "denied"},
		{"namespace not a name", map[string]any{"tag": "v1", "input": "x", "namespace": "Bad_NS"}, "invalid_arguments"},
		{"quantity does not parse", map[string]any{"tag": "v1", "input": "x", "cpu": "lots"}, "invalid_arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, &kubernetesjob.Backend{Namespaces: []string{"agent-jobs"}},
				always(kubernetesjobtest.Outcome{}))
			res, err := e.task.Invoke(context.Background(), "render_report", tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError || res.Error.Kind != tt.kind {
				t.Fatalf("result %+v, want error %s", res, tt.kind)
			}
			if n := len(e.cluster.Created()); n != 0 {
				t.Errorf("%d Jobs created, want none", n)
			}
		})
	}
}

func TestCancellationDeletesTheJob(t *testing.T) {
	leakcheck.Check(t)
	e := newEnv(t, &kubernetesjob.Backend{}, always(kubernetesjobtest.Outcome{Hold: make(chan struct{})}))
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-e.cluster.Running()
		cancel()
	}()
	_, err := e.task.Invoke(ctx, "render_report", args)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	name := e.cluster.Created()[0].Name
	if e.cluster.Exists("agent-jobs", name) || len(e.cluster.Deleted()) != 1 {
		t.Errorf("Job %s: exists %v, deletions %v", name, e.cluster.Exists("agent-jobs", name), e.cluster.Deleted())
	}
}

func TestCloseDeletesRunningJobs(t *testing.T) {
	leakcheck.Check(t)
	e := newEnv(t, &kubernetesjob.Backend{Keep: true}, always(kubernetesjobtest.Outcome{Hold: make(chan struct{})}))
	done := make(chan error, 1)
	go func() {
		_, err := e.task.Invoke(context.Background(), "render_report", args)
		done <- err
	}()
	name := <-e.cluster.Running()
	if err := e.task.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, tool.ErrClosed) {
		t.Errorf("Invoke err = %v, want ErrClosed", err)
	}
	if e.cluster.Exists("agent-jobs", name) {
		t.Errorf("Job %s still exists after Close", name)
	}
}

// Teardown finds the task's Jobs by label, including one this process did not create (a host restart).
func TestTeardownDeletesTheTasksJobs(t *testing.T) {
	leakcheck.Check(t)
	e := newEnv(t, &kubernetesjob.Backend{}, always(kubernetesjobtest.Outcome{Logs: "ok"}))
	if res, err := e.task.Invoke(context.Background(), "render_report", args); err != nil || res.IsError {
		t.Fatal(err, res)
	}
	stray := func(name, task, tl string) *batchv1.Job {
		return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "agent-jobs", Labels: map[string]string{
			kubernetesjob.LabelManagedBy: kubernetesjob.ManagedBy, kubernetesjob.LabelTask: task,
			kubernetesjob.LabelTool: tl, kubernetesjob.LabelToolNamespace: "test"}}}
	}
	for _, j := range []*batchv1.Job{stray("left-over", "task-1", "reports"), stray("other-task", "task-2", "reports"),
		stray("other-tool", "task-1", "other")} {
		if err := e.cluster.Client.Tracker().Add(j); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.task.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"left-over": false, "other-task": true, "other-tool": true} {
		if got := e.cluster.Exists("agent-jobs", name); got != want {
			t.Errorf("after Close: %s exists %v, want %v", name, got, want)
		}
	}
}

// A watch that ends (expiry, a dropped connection) is resumed without losing the Job's completion.
func TestWatchResumes(t *testing.T) {
	leakcheck.Check(t)
	hold := make(chan struct{})
	e := newEnv(t, &kubernetesjob.Backend{}, always(kubernetesjobtest.Outcome{Hold: hold, Logs: "done"}))
	var watches atomic.Int32
	e.cluster.Client.PrependWatchReactor("jobs", func(a k8stesting.Action) (bool, watch.Interface, error) {
		if a.(k8stesting.WatchAction).GetWatchRestrictions().Fields.Empty() {
			return false, nil, nil // the controller's own watch
		}
		if watches.Add(1) == 1 {
			w := watch.NewFake()
			go func() { <-e.cluster.Running(); w.Stop(); close(hold) }()
			return true, w, nil
		}
		return false, nil, nil
	})
	res, err := e.task.Invoke(context.Background(), "render_report", args)
	if err != nil || res.IsError {
		t.Fatal(err, res.Error)
	}
	if res.Output != "done" || watches.Load() < 2 {
		t.Errorf("output %v after %d watches, want done after at least 2", res.Output, watches.Load())
	}
}

func TestResultTooLarge(t *testing.T) {
	leakcheck.Check(t)
	c := kubernetesjobtest.NewCluster(always(kubernetesjobtest.Outcome{Logs: strings.Repeat("x", 2048)}))
	t.Cleanup(c.Close)
	tl, err := tool.Load(context.Background(), []byte(manifest), tool.WithSettings(settings),
		tool.WithRuntimes((&kubernetesjob.Backend{Client: c.Client}).Registry(nil)),
		tool.WithLimits(tool.Limits{ResponseBytes: 1024}))
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
	if !res.IsError || res.Error.Kind != "result_too_large" {
		t.Errorf("result %+v, want result_too_large", res)
	}
}

// The blank import registers the backend in runtime.Default(): manifests load, but calls need a client.
func TestDefaultBackendHasNoClient(t *testing.T) {
	tl, err := tool.Load(context.Background(), []byte(manifest), tool.WithSettings(settings))
	if err != nil {
		t.Fatal(err)
	}
	task, err := tl.NewTask(context.Background(), tool.TaskConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer task.Close(context.Background())
	_, err = task.Invoke(context.Background(), "render_report", args)
	if !errors.Is(err, tool.ErrUnrecoverable) || !errors.Is(err, kubernetesjob.ErrNoClient) {
		t.Errorf("err = %v, want an unrecoverable ErrNoClient", err)
	}
}

func TestLoadProblems(t *testing.T) {
	head := `
kind: commonagents.info/v1beta2/tool
namespace: test
name: reports
description: d
actions:
  - name: run
    description: d
    parameters:
      type: object
      properties:
        count: {type: integer}
    execute:
      kubernetes_job:
`
	container := "\n          template: {spec: {containers: [{name: main, image: busybox}]}}"
	tests := []struct {
		name  string
		block string
		path  string
		typ   string
	}{
		{"namespace missing", "        spec:" + container, "actions[0].execute.kubernetes_job.namespace", "required"},
		{"namespace invalid", "        namespace: Not_Valid\n        spec:" + container,
			"actions[0].execute.kubernetes_job.namespace", "invalid"},
		{"namespace unknown root", "        namespace: \"{parameter.ns}\"\n        spec:" + container,
			"actions[0].execute.kubernetes_job.namespace", "invalid"},
		{"spec missing", "        namespace: ns", "actions[0].execute.kubernetes_job.spec", "required"},
		{"unknown block key", "        namespace: ns\n        image: busybox\n        spec:" + container,
			"actions[0].execute.kubernetes_job.image", "unsupported"},
		{"unknown spec field", "        namespace: ns\n        spec:\n          template: {spec: {containers: [{name: main, imagee: busybox}]}}",
			"actions[0].execute.kubernetes_job.spec.template.spec.containers[0].imagee", "unsupported"},
		{"field names are case-sensitive", "        namespace: ns\n        spec:\n          Parallelism: 2" + container,
			"actions[0].execute.kubernetes_job.spec.Parallelism", "unsupported"},
		{"template in a number field", "        namespace: ns\n        spec:\n          parallelism: \"{parameters.count}\"" + container,
			"actions[0].execute.kubernetes_job.spec.parallelism", "invalid"},
		{"undeclared parameter", "        namespace: ns\n        spec:\n          template: {spec: {containers: [{name: main, image: \"{parameters.img}\"}]}}",
			"actions[0].execute.kubernetes_job.spec.template.spec.containers[0].image", "invalid"},
		{"no container", "        namespace: ns\n        spec:\n          template: {spec: {containers: []}}",
			"actions[0].execute.kubernetes_job.spec.template.spec.containers", "required"},
		{"restart policy Always", "        namespace: ns\n        spec:\n          template: {spec: {restartPolicy: Always, containers: [{name: main, image: busybox}]}}",
			"actions[0].execute.kubernetes_job.spec.template.spec.restartPolicy", "unsupported"},
		{"activeDeadlineSeconds not positive", "        namespace: ns\n        spec:\n          activeDeadlineSeconds: -5" + container,
			"actions[0].execute.kubernetes_job.spec.activeDeadlineSeconds", "invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tool.Load(context.Background(), []byte(head+tt.block))
			verr, ok := errors.AsType[*tool.ValidationError](err)
			if !ok {
				t.Fatalf("err = %v, want a ValidationError", err)
			}
			for _, p := range verr.Problems {
				if p.Path == tt.path && p.Type == tt.typ {
					return
				}
			}
			t.Errorf("no %s problem at %s in %v", tt.typ, tt.path, verr.Problems)
		})
	}
	t.Run("valid", func(t *testing.T) {
		if _, err := tool.Load(context.Background(), []byte(head+"        namespace: ns\n        spec:"+container)); err != nil {
			t.Fatal(err)
		}
	})
}

// A top-level kubernetes_job block gives actions defaults; it is checked on its own.
func TestSharedBlock(t *testing.T) {
	const m = `
kind: commonagents.info/v1beta2/tool
namespace: test
name: reports
description: d
kubernetes_job:
  namespace: shared-ns
  spec: %s
actions:
  - name: run
    description: d
    execute:
      kubernetes_job:
        spec:
          template: {spec: {containers: [{name: main, image: busybox}]}}
`
	c := kubernetesjobtest.NewCluster(always(kubernetesjobtest.Outcome{Logs: "ok"}))
	defer c.Close()
	tl, err := tool.Load(context.Background(), []byte(fmt.Sprintf(m, "{template: {spec: {containers: [{name: a, image: b}]}}}")),
		tool.WithRuntimes((&kubernetesjob.Backend{Client: c.Client}).Registry(nil)))
	if err != nil {
		t.Fatal(err)
	}
	task, err := tl.NewTask(context.Background(), tool.TaskConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer task.Close(context.Background())
	if res, err := task.Invoke(context.Background(), "run", nil); err != nil || res.IsError || res.Output != "ok" {
		t.Fatal(err, res)
	}
	if j := c.Created()[0]; j.Namespace != "shared-ns" || j.Spec.Template.Spec.Containers[0].Image != "busybox" {
		t.Errorf("Job in %s with image %s, want shared-ns and the action's busybox", j.Namespace,
			j.Spec.Template.Spec.Containers[0].Image)
	}

	_, err = tool.Load(context.Background(), []byte(fmt.Sprintf(m, "{bogus: 1}")))
	verr, ok := errors.AsType[*tool.ValidationError](err)
	if !ok || !slices.ContainsFunc(verr.Problems, func(p tool.Problem) bool {
		return p.Path == "kubernetes_job.spec.bogus" && p.Type == "unsupported"
	}) {
		t.Errorf("err = %v, want an unsupported problem at kubernetes_job.spec.bogus", err)
	}
}

// The root package must not pull client-go in: hosts opt in with this package.
func TestRootDoesNotImportClientGo(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", "github.com/commonagents-go/tool").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "github.com/commonagents-go/tool/runtime\n") {
		t.Fatalf("go list output does not look like the root's dependencies:\n%s", out)
	}
	for line := range strings.Lines(string(out)) {
		if strings.HasPrefix(line, "k8s.io/") || strings.Contains(line, "runtime/kubernetesjob") {
			t.Errorf("the root package depends on %s", strings.TrimSpace(line))
		}
	}
}

func ExampleBackend_Registry() {
	ctx := context.Background()
	// A fake cluster whose Jobs succeed with a JSON termination message; a host passes a real client instead
	// (kubernetesjob.NewClient).
	cluster := kubernetesjobtest.NewCluster(func(*batchv1.Job) kubernetesjobtest.Outcome {
		return kubernetesjobtest.Outcome{Message: `{"pages": 12}`}
	})
	defer cluster.Close()

	jobs := &kubernetesjob.Backend{Client: cluster.Client, Namespaces: []string{"agent-jobs"}}
	t, err := tool.Load(ctx, []byte(manifest), tool.WithSettings(settings), tool.WithRuntimes(jobs.Registry(nil)))
	if err != nil {
		panic(err)
	}
	task, err := t.NewTask(ctx, tool.TaskConfig{})
	if err != nil {
		panic(err)
	}
	defer task.Close(ctx)
	res, err := task.Invoke(ctx, "render_report", map[string]any{"tag": "v2", "input": "q3.csv"})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(res.OutputJSON))
	res, _ = task.Invoke(ctx, "render_report", map[string]any{"tag": "v2", "input": "q3.csv", "namespace": "kube-system"})
	fmt.Println(res.Error.Kind+":", res.Error.Message)
	res, _ = task.Invoke(ctx, "render_report", map[string]any{"tag": "v2", "input": "q3.csv", "cpu": "lots"})
	fmt.Println(res.Error.Kind+":", res.Error.Message)
	// Output:
	// {"pages":12}
	// denied: namespace "kube-system" is not one this tool may run Jobs in
	// invalid_arguments: the arguments make an invalid Job spec: spec: not a valid batch/v1 JobSpec: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'
}

// The cluster refusing a Job: recoverable when the call or the moment is at fault, unrecoverable when the
// backend's credentials or permissions are.
func TestCreateRefused(t *testing.T) {
	leakcheck.Check(t)
	gr := schema.GroupResource{Group: "batch", Resource: "jobs"}
	tests := []struct {
		name        string
		err         error
		kind        string // recoverable error kind; "" = unrecoverable
		unrecovered bool
	}{
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Group: "batch", Kind: "Job"}, "",
			field.ErrorList{field.Required(field.NewPath("spec", "template", "spec", "containers").Index(0).Child("image"), "")}),
			"invalid_request", false},
		{"quota", apierrors.NewForbidden(gr, "", errors.New("exceeded quota: compute, requested: cpu=500m")), "unavailable", false},
		{"throttled", apierrors.NewTooManyRequests("slow down", 1), "unavailable", false},
		{"namespace missing", apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "agent-jobs"), "invalid_request", false},
		{"no permission", apierrors.NewForbidden(gr, "", errors.New("User \"agent\" cannot create jobs")), "", true},
		{"bad credentials", apierrors.NewUnauthorized("token expired"), "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, &kubernetesjob.Backend{}, always(kubernetesjobtest.Outcome{}))
			e.cluster.Client.PrependReactor("create", "jobs", func(k8stesting.Action) (bool, k8sruntime.Object, error) {
				return true, nil, tt.err
			})
			res, err := e.task.Invoke(context.Background(), "render_report", args)
			switch {
			case tt.unrecovered && !errors.Is(err, tool.ErrUnrecoverable):
				t.Errorf("err = %v, result %+v; want an unrecoverable error", err, res)
			case !tt.unrecovered && err != nil:
				t.Fatal(err)
			case !tt.unrecovered && (!res.IsError || res.Error.Kind != tt.kind):
				t.Errorf("result %+v, want a %s error", res, tt.kind)
			}
		})
	}
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
func TestCreateThatTimesOutIsRecoverableAndCleanedUp(t *testing.T) {
	// In a synctest bubble the 150 ms the API server takes pass on the bubble's clock, which moves only once every
	// goroutine waits: the request's 50 ms timeout has certainly fired (and cancelled its context) by then.
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, &kubernetesjob.Backend{RequestTimeout: 50 * time.Millisecond}, always(kubernetesjobtest.Outcome{}))
		gvr := batchv1.SchemeGroupVersion.WithResource("jobs")
		e.cluster.Client.PrependReactor("create", "jobs", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
			job := a.(k8stesting.CreateAction).GetObject().(*batchv1.Job).DeepCopy()
			job.Name = job.GenerateName + "slow"
			if err := e.cluster.Client.Tracker().Create(gvr, job, job.Namespace); err != nil {
				return true, nil, err
			}
			time.Sleep(150 * time.Millisecond) // a slow API server, on the bubble's clock: it answers after the timeout
			return true, nil, fmt.Errorf("client rate limiter: %w", context.DeadlineExceeded)
		})
		res, err := e.task.Invoke(context.Background(), "render_report", args)
		if err != nil || !res.IsError || res.Error.Kind != "unavailable" {
			t.Fatalf("err %v, result %+v; want an unavailable result", err, res)
		}
		if e.cluster.Exists("agent-jobs", "render-report-slow") {
			t.Errorf("the Job of the timed-out create still exists; deletions %v", e.cluster.Deleted())
		}
	})
}
