package kubernetesjob

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/commonagents-go/tool/internal/decode"
	"github.com/commonagents-go/tool/runtime"
)

// run is one call's Job, from its creation to its deletion.
type run struct {
	i    *instance
	key  jobKey
	job  *batchv1.Job // as created
	call string
}

func (r *run) fact() map[string]any {
	return map[string]any{"namespace": r.key.namespace, "job": r.key.name, "call_id": r.call}
}

// deadlineGrace is how long past the Job's activeDeadlineSeconds the call waits for the cluster to end it.
const deadlineGrace = time.Minute

// do waits for the Job, reads its result and deletes it. A Job that did not finish (cancelled, stuck) is always
// deleted; a finished one unless the backend keeps Jobs.
func (r *run) do(ctx context.Context) (*runtime.Result, error) {
	job, stuck, err := r.wait(ctx)
	if err != nil || stuck != nil {
		_ = r.i.deleteJob(ctx, r.key)
		if err != nil {
			return nil, err
		}
		return r.withData(runtime.Fail(stuck)), nil
	}
	res, err := r.outcome(ctx, job)
	if r.i.b.Keep {
		if res != nil {
			res.ServerData["kept"] = true
		}
		return res, err
	}
	if derr := r.i.deleteJob(ctx, r.key); derr != nil && res != nil {
		res.ServerData["delete_error"] = string(apierrors.ReasonForError(derr))
	}
	return res, err
}

func (r *run) withData(res *runtime.Result) *runtime.Result {
	if res.ServerData == nil {
		res.ServerData = map[string]any{}
	}
	res.ServerData["namespace"], res.ServerData["job"] = r.key.namespace, r.key.name
	return res
}

// wait watches the Job until it finishes and returns it. It returns a recoverable error instead when the Job's pod
// is still Pending at the pending deadline, when the Job is deleted by someone else or when the cluster does not
// end it within its activeDeadlineSeconds plus a grace; and ctx's error when ctx ends. An expired or broken watch
// is resumed; every (re)start reads the Job once, so no change between two watches is missed.
func (r *run) wait(ctx context.Context) (*batchv1.Job, *runtime.Error, error) {
	jobs := r.i.client.BatchV1().Jobs(r.key.namespace)
	pending := time.NewTimer(r.i.b.pendingTimeout())
	defer pending.Stop()
	limit := r.i.b.activeDeadline()
	if s := r.job.Spec.ActiveDeadlineSeconds; s != nil {
		limit = time.Duration(*s) * time.Second
	}
	backstop := time.NewTimer(limit + deadlineGrace)
	defer backstop.Stop()
	sel := fields.OneTermEqualSelector("metadata.name", r.key.name).String()
	retry := newBackoff()
	for {
		w, err := jobs.Watch(ctx, metav1.ListOptions{FieldSelector: sel, AllowWatchBookmarks: true})
		var cur *batchv1.Job
		if err == nil {
			cur, err = jobs.Get(ctx, r.key.name, metav1.GetOptions{})
			if err != nil {
				w.Stop()
			}
		}
		switch {
		case ctx.Err() != nil:
			if err == nil {
				w.Stop()
			}
			return nil, nil, fmt.Errorf("kubernetes_job: Job %s/%s: %w", r.key.namespace, r.key.name, ctx.Err())
		case apierrors.IsNotFound(err):
			return nil, r.gone(), nil
		case err != nil:
			r.i.logger.WarnContext(ctx, "kubernetes_job: watching a Job failed; retrying", "namespace", r.key.namespace,
				"job", r.key.name, "error", err)
			retry.sleep(ctx) // when ctx ends, the next turn reports it
			continue
		}
		if done, _ := finished(cur); done {
			w.Stop()
			return cur, nil, nil
		}
		job, stuck, err := r.events(ctx, w, pending, backstop, limit)
		w.Stop()
		if job != nil || stuck != nil || err != nil {
			return job, stuck, err
		}
		retry.reset()
	}
}

// events consumes one watch until the Job finishes (returned), something fails, or the watch ends (all nil).
func (r *run) events(ctx context.Context, w watch.Interface, pending, backstop *time.Timer, limit time.Duration) (*batchv1.Job, *runtime.Error, error) {
	for {
		select {
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("kubernetes_job: Job %s/%s: %w", r.key.namespace, r.key.name, ctx.Err())
		case <-backstop.C:
			return nil, runtime.Errorf(runtime.KindTimeout, "the Job did not finish within its deadline of %s", limit), nil
		case <-pending.C:
			if stuck := r.stuck(ctx); stuck != nil {
				return nil, stuck, nil
			}
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil, nil, nil
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				if j, ok := ev.Object.(*batchv1.Job); ok && j.Name == r.key.name {
					if done, _ := finished(j); done {
						return j, nil, nil
					}
				}
			case watch.Deleted:
				if j, ok := ev.Object.(*batchv1.Job); ok && j.Name == r.key.name {
					return nil, r.gone(), nil
				}
			case watch.Error:
				r.i.logger.DebugContext(ctx, "kubernetes_job: the watch ended; resuming", "namespace", r.key.namespace,
					"job", r.key.name, "error", apierrors.FromObject(ev.Object))
				return nil, nil, nil
			}
		}
	}
}

func (r *run) gone() *runtime.Error {
	return runtime.Errorf(runtime.KindUnavailable, "the Job was deleted before it finished")
}

// finished reports whether j has ended, and whether it failed.
func finished(j *batchv1.Job) (done, failed bool) {
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return true, false
		case batchv1.JobFailed:
			return true, true
		}
	}
	return false, false
}

// stuck looks at the Job's pods at the pending deadline: when none has left Pending it returns the error naming
// why (an image that cannot be pulled, an unschedulable pod).
func (r *run) stuck(ctx context.Context) *runtime.Error {
	pods, err := r.pods(ctx)
	if err != nil {
		return nil // the next deadline, the Job's own, still bounds the call
	}
	for _, p := range pods {
		if p.Status.Phase != corev1.PodPending && p.Status.Phase != "" {
			return nil
		}
	}
	reason, msg := pendingReason(pods)
	kind := runtime.KindUnavailable
	switch reason {
	case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "CreateContainerConfigError",
		"CreateContainerError":
		kind = runtime.KindInvalidRequest
	}
	text := fmt.Sprintf("the Job's pod was still Pending after %s: %s", r.i.b.pendingTimeout(), reason)
	if msg != "" {
		text += ": " + clip(msg, 300)
	}
	return runtime.Errorf(kind, "%s", text)
}

// pendingReason names why pods are Pending: a container's waiting reason, else the scheduler's.
func pendingReason(pods []corev1.Pod) (reason, message string) {
	if len(pods) == 0 {
		return "NoPod", "the Job has not created a pod"
	}
	for _, p := range pods {
		for _, cs := range slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses) {
			if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" &&
				w.Reason != "PodInitializing" {
				return w.Reason, w.Message
			}
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason != "" {
				return c.Reason, c.Message
			}
		}
	}
	return "Pending", ""
}

func (r *run) pods(ctx context.Context) ([]corev1.Pod, error) {
	sel := labels.Set{labelJobName: r.key.name}.String()
	list, err := r.i.client.CoreV1().Pods(r.key.namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// outcome reads the result of a finished Job from its pod: the main container's termination message, else its
// log. A failed Job is a recoverable error with the reason, the exit code and a log tail.
func (r *run) outcome(ctx context.Context, job *batchv1.Job) (*runtime.Result, error) {
	_, failed := finished(job)
	pods, err := r.pods(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("kubernetes_job: Job %s/%s: %w", r.key.namespace, r.key.name, ctx.Err())
		}
		res, err := apiFailure("reading the Job's pods", err)
		if res != nil {
			res = r.withData(res)
		}
		return res, err
	}
	phase := corev1.PodSucceeded
	if failed {
		phase = corev1.PodFailed
	}
	pod := lastPod(pods, phase)
	if failed {
		return r.failure(ctx, job, pod), nil
	}
	if pod == nil {
		return r.withData(runtime.Fail(runtime.Errorf(runtime.KindMalformedResponse,
			"the Job completed but its pod is gone, so its result cannot be read"))), nil
	}
	res := r.withData(&runtime.Result{})
	res.ServerData["pod"] = pod.Name
	name, term := mainContainer(pod)
	if term != nil && term.Message != "" {
		res.Output = output([]byte(term.Message))
		res.ServerData["source"] = "termination_message"
		res.BytesIn = int64(len(term.Message))
		return res, nil
	}
	limit := r.i.limits.ResponseBytes
	if limit <= 0 {
		limit = DefaultResultBytes
	}
	data, err := r.log(ctx, pod.Name, name, limit+1, nil)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("kubernetes_job: Job %s/%s: %w", r.key.namespace, r.key.name, ctx.Err())
		}
		out, err := apiFailure("reading the Job's log", err)
		if out != nil {
			out = r.withData(out)
		}
		return out, err
	}
	res.BytesIn = int64(len(data))
	res.ServerData["source"] = "log"
	if int64(len(data)) > limit {
		res.Error = runtime.Errorf(runtime.KindResultTooLarge, "the Job's log is larger than %d bytes", limit)
		return res, nil
	}
	res.Output = output(data)
	return res, nil
}

// failure describes a failed Job for the LLM: the Job's reason, the container's exit code and termination
// message, and a tail of its log.
func (r *run) failure(ctx context.Context, job *batchv1.Job, pod *corev1.Pod) *runtime.Result {
	reason, detail := "Failed", ""
	for _, c := range job.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
			reason, detail = cmp.Or(c.Reason, reason), c.Message
		}
	}
	kind := runtime.KindToolError
	if reason == batchv1.JobReasonDeadlineExceeded {
		kind = runtime.KindTimeout
	}
	var b strings.Builder
	fmt.Fprintf(&b, "the Job failed (%s)", reason)
	if detail != "" {
		fmt.Fprintf(&b, ": %s", clip(detail, 300))
	}
	res := r.withData(&runtime.Result{})
	res.ServerData["reason"] = reason
	if pod != nil {
		res.ServerData["pod"] = pod.Name
		name, term := mainContainer(pod)
		if term != nil {
			fmt.Fprintf(&b, "; container %s exited with code %d", name, term.ExitCode)
			res.ServerData["exit_code"] = term.ExitCode
			if term.Message != "" {
				fmt.Fprintf(&b, ": %s", clip(strings.TrimSpace(term.Message), r.i.b.logTailBytes()))
			}
		}
		lines := int64(50)
		if tail, err := r.log(ctx, pod.Name, name, 64<<10, &lines); err == nil && len(bytes.TrimSpace(tail)) > 0 {
			t := lastBytes(tail, r.i.b.logTailBytes())
			fmt.Fprintf(&b, "\nlog tail:\n%s", t)
			res.ServerData["log_tail"] = t
		}
	}
	e := runtime.Errorf(kind, "%s", b.String())
	e.Retryable = false
	res.Error = e
	return res
}

// mainContainer returns the pod's first container and its terminated state, if any.
func mainContainer(p *corev1.Pod) (string, *corev1.ContainerStateTerminated) {
	if len(p.Spec.Containers) == 0 {
		return "", nil
	}
	name := p.Spec.Containers[0].Name
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == name {
			return name, cmp.Or(cs.State.Terminated, cs.LastTerminationState.Terminated)
		}
	}
	return name, nil
}

// lastPod returns the most recently created pod in phase, or nil.
func lastPod(pods []corev1.Pod, phase corev1.PodPhase) *corev1.Pod {
	var out *corev1.Pod
	for n := range pods {
		p := &pods[n]
		if p.Status.Phase == phase && (out == nil || !p.CreationTimestamp.Before(&out.CreationTimestamp)) {
			out = p
		}
	}
	return out
}

// log reads at most limit bytes of a container's log (the last tailLines lines when set).
func (r *run) log(ctx context.Context, pod, container string, limit int64, tailLines *int64) ([]byte, error) {
	opts := &corev1.PodLogOptions{Container: container, LimitBytes: &limit, TailLines: tailLines}
	stream, err := r.i.client.CoreV1().Pods(r.key.namespace).GetLogs(pod, opts).Stream(ctx)
	if err != nil {
		return nil, err
	}
	defer stream.Close()
	return io.ReadAll(io.LimitReader(stream, limit))
}

// lastBytes returns the end of data, at most n bytes, as valid UTF-8.
func lastBytes(data []byte, n int) string {
	data = bytes.TrimRight(data, "\r\n")
	if len(data) > n {
		data = data[len(data)-n:]
	}
	return strings.ToValidUTF8(string(data), "")
}

// output is a result as the LLM sees it: JSON when the text is JSON, else the text without its final newline.
func output(data []byte) any {
	if t := bytes.TrimSpace(data); len(t) > 0 && json.Valid(t) {
		if v, err := decode.JSON(t); err == nil {
			return v
		}
	}
	return strings.ToValidUTF8(strings.TrimRight(string(data), "\r\n"), "\uFFFD")
}

// backoff spaces out retries of a failing watch.
type backoff struct{ d time.Duration }

func newBackoff() *backoff { return &backoff{d: 100 * time.Millisecond} }
func (b *backoff) reset()  { b.d = 100 * time.Millisecond }

// sleep waits for the current delay, doubling it up to 5s; it reports false when ctx ended first.
func (b *backoff) sleep(ctx context.Context) bool {
	t := time.NewTimer(b.d)
	defer t.Stop()
	b.d = min(2*b.d, 5*time.Second)
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
