package kubernetesjob

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/commonagents-go/tool/facts"
	"github.com/commonagents-go/tool/runtime"
)

// jobKey names one Job.
type jobKey struct{ namespace, name string }

// instance runs the Jobs of one task. It is safe for concurrent use.
type instance struct {
	b            *Backend
	client       kubernetes.Interface
	taskID, tool string
	toolNS       string // the manifest's namespace
	limits       runtime.Limits
	state        runtime.State
	observe      func(ctx context.Context, name string, data map[string]any)
	logger       *slog.Logger

	mu         sync.Mutex
	namespaces map[string]bool // every namespace the task created Jobs in, also before a restart
	running    map[jobKey]bool // Jobs whose call is still running
	closed     bool

	teardownOnce sync.Once
	teardownErr  error
}

// Invoke runs one Job: it renders the namespace and spec, refuses a namespace the host did not allow (denied),
// creates the Job, waits for it by watch and reads its result before deleting it. The Job's failure, a pod stuck
// Pending past the backend's PendingTimeout and the cluster refusing the Job are recoverable errors; when ctx
// ends, the Job is deleted and ctx's error returned.
func (i *instance) Invoke(ctx context.Context, a runtime.Action, call *runtime.Call) (*runtime.Result, error) {
	act, ok := a.(*Action)
	if !ok || act.Namespace == nil {
		return nil, runtime.Unrecoverable(fmt.Errorf("kubernetes_job: action of type %T", a))
	}
	ns, err := act.Namespace.RenderString(call.Values)
	if err != nil {
		return nil, err
	}
	if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
		return runtime.Fail(runtime.Errorf(runtime.KindInvalidArguments, "namespace %q is not a valid namespace name: %s",
			ns, msgs[0])), nil
	}
	if !i.b.allowed(ns) {
		return runtime.Fail(runtime.Errorf(runtime.KindDenied, "namespace %q is not one this tool may run Jobs in", ns)), nil
	}
	spec, err := act.RenderSpec(call.Values)
	if err != nil {
		return nil, err
	}
	if err := i.remember(ctx, ns); err != nil {
		return nil, err
	}
	job := i.newJob(ns, call, spec)
	cctx, cancel := context.WithTimeout(ctx, i.b.requestTimeout())
	created, err := i.client.BatchV1().Jobs(ns).Create(cctx, job, metav1.CreateOptions{})
	lost := cctx.Err() != nil
	cancel()
	if err != nil {
		if lost {
			// The Job may exist though the answer was lost: find it by its call label.
			i.deleteCall(ctx, ns, job.Labels[LabelCall])
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("kubernetes_job: creating a Job in %s: %w", ns, ctx.Err())
		}
		return apiFailure("creating the Job", err)
	}
	r := &run{i: i, key: jobKey{ns, created.Name}, job: created, call: call.ID}
	i.track(r.key, true)
	defer i.track(r.key, false)
	i.observe(ctx, facts.JobCreated, r.fact())
	return r.do(ctx)
}

// ownLabels are the labels that select this task's Jobs (and no other tool's Jobs of a task with the same ID).
func (i *instance) ownLabels() labels.Set {
	return labels.Set{LabelManagedBy: ManagedBy, LabelTask: labelValue(i.taskID), LabelTool: labelValue(i.tool),
		LabelToolNamespace: labelValue(i.toolNS)}
}

// newJob builds the Job of one call: the spec with the backend's defaults, a generated name and the labels that
// name the task, tool, action and call, on the Job and on its pods.
func (i *instance) newJob(ns string, call *runtime.Call, spec *batchv1.JobSpec) *batchv1.Job {
	lbl := map[string]string(i.ownLabels())
	lbl[LabelAction], lbl[LabelCall] = labelValue(call.Action), labelValue(call.ID)
	ann := map[string]string{LabelTask: i.taskID, LabelTool: i.tool, LabelAction: call.Action, LabelCall: call.ID}
	if spec.BackoffLimit == nil {
		var n int32
		if i.b.BackoffLimit != nil {
			n = *i.b.BackoffLimit
		}
		spec.BackoffLimit = &n
	}
	if spec.ActiveDeadlineSeconds == nil {
		s := int64(i.b.activeDeadline() / time.Second)
		spec.ActiveDeadlineSeconds = &s
	}
	if spec.TTLSecondsAfterFinished == nil {
		s := int32(i.b.ttl() / time.Second)
		spec.TTLSecondsAfterFinished = &s
	}
	if spec.Template.Spec.RestartPolicy == "" {
		spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	}
	if spec.Template.Labels == nil {
		spec.Template.Labels = map[string]string{}
	}
	maps.Copy(spec.Template.Labels, lbl)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{GenerateName: generateName(call.Action), Namespace: ns, Labels: lbl, Annotations: ann},
		Spec:       *spec,
	}
}

// remember records ns in the task state before the first Job there is created, so that Teardown finds it even
// after a host restart.
func (i *instance) remember(ctx context.Context, ns string) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.closed {
		return runtime.Unrecoverable(errors.New("kubernetes_job: the task is being torn down"))
	}
	if i.namespaces[ns] {
		return nil
	}
	i.namespaces[ns] = true
	if i.state == nil {
		return nil
	}
	if err := i.state.Save(ctx, encodeState(i.namespaces)); err != nil {
		delete(i.namespaces, ns)
		return runtime.Unrecoverable(fmt.Errorf("kubernetes_job: recording namespace %s in the task state: %w", ns, err))
	}
	return nil
}

func (i *instance) track(k jobKey, on bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if on {
		i.running[k] = true
	} else {
		delete(i.running, k)
	}
}

// teardownTimeout bounds one cleanup request made after the call's context ended, and Teardown when its ctx has
// no deadline.
func (i *instance) teardownTimeout() time.Duration {
	return orDefault(i.limits.TeardownTimeout, 10*time.Second)
}

// deleteJob deletes one Job of a call, bounded by the teardown bound even when ctx has ended (a cancelled call
// still removes its Job).
func (i *instance) deleteJob(ctx context.Context, k jobKey) error {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), i.teardownTimeout())
	defer cancel()
	return i.delete(dctx, k)
}

// delete deletes one Job with background propagation (its pods go too), bounded by ctx alone. A Job already gone
// is no error.
func (i *instance) delete(ctx context.Context, k jobKey) error {
	policy := metav1.DeletePropagationBackground
	err := i.client.BatchV1().Jobs(k.namespace).Delete(ctx, k.name, metav1.DeleteOptions{PropagationPolicy: &policy})
	fact := map[string]any{"namespace": k.namespace, "job": k.name}
	if err != nil && !apierrors.IsNotFound(err) {
		fact["error"] = cmp.Or(string(apierrors.ReasonForError(err)), "request failed")
		i.observe(ctx, facts.JobDeleteFailed, fact)
		i.logger.WarnContext(ctx, "kubernetes_job: deleting a Job failed; its TTL removes it later",
			"namespace", k.namespace, "job", k.name, "error", err)
		return fmt.Errorf("kubernetes_job: deleting Job %s/%s: %w", k.namespace, k.name, err)
	}
	i.observe(ctx, facts.JobDeleted, fact)
	return nil
}

// deleteCall deletes the Jobs of one call found by label, for a create whose answer was lost.
func (i *instance) deleteCall(ctx context.Context, ns, call string) {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), i.teardownTimeout())
	defer cancel()
	sel := i.ownLabels()
	sel[LabelCall] = call
	list, err := i.client.BatchV1().Jobs(ns).List(lctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		i.logger.WarnContext(ctx, "kubernetes_job: listing the Jobs of a cancelled call failed", "namespace", ns, "error", err)
		return
	}
	for _, j := range list.Items {
		_ = i.delete(lctx, jobKey{ns, j.Name})
	}
}

// teardownParallel bounds the API requests Teardown has in flight.
const teardownParallel = 8

// Teardown deletes every Job of this task still in the cluster, found by the task and tool labels in every
// namespace the task used (recorded in the task state, so also Jobs created before a host restart). With
// Backend.Keep, finished Jobs stay. The requests run in parallel, all bounded by ctx (by the teardown bound when
// ctx has no deadline). It runs once; later calls return the first result.
func (i *instance) Teardown(ctx context.Context) error {
	i.teardownOnce.Do(func() { i.teardownErr = i.teardown(ctx) })
	return i.teardownErr
}

func (i *instance) teardown(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, i.teardownTimeout())
		defer cancel()
	}
	i.mu.Lock()
	i.closed = true
	namespaces := slices.Sorted(maps.Keys(i.namespaces))
	running := maps.Clone(i.running) // deleted even if listing fails
	i.mu.Unlock()

	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		seen = map[jobKey]bool{}
		sem  = make(chan struct{}, teardownParallel)
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	del := func(k jobKey) {
		mu.Lock()
		dup := seen[k]
		seen[k] = true
		mu.Unlock()
		if dup {
			return
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := i.delete(ctx, k); err != nil {
				fail(err)
			}
		})
	}
	for k := range running {
		del(k)
	}
	sel := i.ownLabels().String()
	for _, ns := range namespaces {
		wg.Go(func() {
			sem <- struct{}{}
			list, err := i.client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
			<-sem
			if err != nil {
				fail(fmt.Errorf("kubernetes_job: listing the task's Jobs in %s: %w", ns, err))
				return
			}
			for n := range list.Items {
				if done, _ := finished(&list.Items[n]); done && i.b.Keep {
					continue
				}
				del(jobKey{ns, list.Items[n].Name})
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// apiFailure classifies an API error (SPEC §7.1): a refused Job, a full quota or a throttled request is
// recoverable; a cluster that cannot be reached, or that refuses the backend's credentials or permissions, is a
// configuration problem, unrecoverable (SPEC §7.1).
func apiFailure(what string, err error) (*runtime.Result, error) {
	msg := apiMessage(err)
	switch {
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		return runtime.Fail(runtime.Errorf(runtime.KindInvalidRequest, "%s: the cluster refused it: %s", what, msg)), nil
	case apierrors.IsNotFound(err):
		return runtime.Fail(runtime.Errorf(runtime.KindInvalidRequest, "%s: %s", what, msg)), nil
	case apierrors.IsForbidden(err) && strings.Contains(msg, "exceeded quota"),
		apierrors.IsTooManyRequests(err), apierrors.IsServerTimeout(err), apierrors.IsTimeout(err),
		apierrors.IsServiceUnavailable(err), apierrors.IsInternalError(err), apierrors.IsConflict(err),
		apierrors.IsAlreadyExists(err):
		return runtime.Fail(runtime.Errorf(runtime.KindUnavailable, "%s: %s", what, msg)), nil
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return runtime.Fail(runtime.Errorf(runtime.KindUnavailable, "%s: the cluster did not answer in time", what)), nil
	}
	return nil, runtime.Unrecoverable(fmt.Errorf("kubernetes_job: %s: %w", what, err))
}

// apiMessage is the API server's message, bounded.
func apiMessage(err error) string {
	msg := err.Error()
	var s apierrors.APIStatus
	if errors.As(err, &s) && s.Status().Message != "" {
		msg = s.Status().Message
	}
	return clip(msg, 512)
}

// clip bounds s to n bytes, marking the cut, which falls between two UTF-8 sequences.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
