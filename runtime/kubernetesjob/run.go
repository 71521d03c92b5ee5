package kubernetesjob

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
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

// maxDeadline caps the call's backstop: an activeDeadlineSeconds beyond it (a manifest meaning "no deadline")
// would overflow time.Duration.
const maxDeadline = 100 * 365 * 24 * time.Hour

// minWatchLife is how long a watch that delivered no change must have lasted for the next one to open at once;
// a watch that ends sooner (a proxy cutting long requests, repeated error events) is reopened with a back-off.
const minWatchLife = 10 * time.Second

// jobDeadline is the Job's activeDeadlineSeconds as a duration (def when unset), capped at maxDeadline.
func jobDeadline(s *int64, def time.Duration) time.Duration {
	switch {
	case s == nil:
		return min(def, maxDeadline)
	case *s >= int64(maxDeadline/time.Second):
		return maxDeadline
	case *s < 0:
		return 0
	}
	return time.Duration(*s) * time.Second
}

// deadlines are the bounds of one call's wait besides its ctx.
type deadlines struct {
	pending, backstop *time.Timer
	limit             time.Duration
}

// wait watches the Job until it finishes and returns it. It returns a recoverable error instead when the Job's pod
// is still Pending at the pending deadline, when the Job is deleted by someone else or when the cluster does not
// end it within its activeDeadlineSeconds plus a grace; ctx's error when ctx ends; and the API error, classified
// by apiFailure, when the cluster refuses the watch or the read (no permission). An expired or broken watch is
// resumed, with a back-off when it ended at once; every (re)start reads the Job once, so no change between two
// watches is missed.
func (r *run) wait(ctx context.Context) (*batchv1.Job, *runtime.Error, error) {
	limit := jobDeadline(r.job.Spec.ActiveDeadlineSeconds, r.i.b.activeDeadline())
	d := &deadlines{pending: time.NewTimer(r.i.b.pendingTimeout()), backstop: time.NewTimer(limit + deadlineGrace),
		limit: limit}
	defer d.pending.Stop()
	defer d.backstop.Stop()
	retry := newBackoff()
	for {
		w, cur, err := r.open(ctx)
		switch {
		case ctx.Err() != nil:
			if w != nil {
				w.Stop()
			}
			return nil, nil, r.ctxErr(ctx)
		case apierrors.IsNotFound(err):
			return nil, r.gone(), nil
		case err != nil && !transient(err):
			res, err := apiFailure("watching the Job", err)
			if err != nil {
				return nil, nil, err
			}
			return nil, res.Error, nil
		case err != nil:
			r.i.logger.WarnContext(ctx, "kubernetes_job: watching a Job failed; retrying", "namespace", r.key.namespace,
				"job", r.key.name, "error", err)
			if stuck, err := r.pause(ctx, retry.next(), d); stuck != nil || err != nil {
				return nil, stuck, err
			}
			continue
		}
		if done, _ := finished(cur); done {
			w.Stop()
			return cur, nil, nil
		}
		start := time.Now()
		job, stuck, progress, err := r.events(ctx, w, d)
		w.Stop()
		if job != nil || stuck != nil || err != nil {
			return job, stuck, err
		}
		if progress || time.Since(start) >= minWatchLife {
			retry.reset()
			continue
		}
		if stuck, err := r.pause(ctx, retry.next(), d); stuck != nil || err != nil {
			return nil, stuck, err
		}
	}
}

// open starts a watch on the Job, then reads it; each request is bounded by the backend's request timeout (the
// watch itself only by ctx). On an error no watch is left open.
func (r *run) open(ctx context.Context) (watch.Interface, *batchv1.Job, error) {
	jobs := r.i.client.BatchV1().Jobs(r.key.namespace)
	sel := fields.OneTermEqualSelector("metadata.name", r.key.name).String()
	wctx, stop := context.WithCancel(ctx)
	timer := time.AfterFunc(r.i.b.requestTimeout(), stop) // the watch must answer in time
	w, err := jobs.Watch(wctx, metav1.ListOptions{FieldSelector: sel, AllowWatchBookmarks: true})
	if !timer.Stop() { // stop was called: the watch, if any, is dead
		if err == nil {
			w.Stop()
		}
		err = fmt.Errorf("opening a watch: %w", context.DeadlineExceeded)
	}
	if err != nil {
		stop()
		return nil, nil, err
	}
	w = &stopWatch{Interface: w, cancel: stop}
	gctx, cancel := context.WithTimeout(ctx, r.i.b.requestTimeout())
	defer cancel()
	cur, err := jobs.Get(gctx, r.key.name, metav1.GetOptions{})
	if err != nil {
		w.Stop()
		return nil, nil, err
	}
	return w, cur, nil
}

// stopWatch releases the watch's context when the watch stops.
type stopWatch struct {
	watch.Interface
	cancel context.CancelFunc
}

func (w *stopWatch) Stop() {
	w.Interface.Stop()
	w.cancel()
}

// transient reports whether a failed watch or read is worth retrying: the cluster is busy or unreachable, not
// refusing the request.
func transient(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true // a network error
	}
	return apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err) || apierrors.IsUnexpectedServerError(err)
}

// pause waits for delay before the next watch, still honouring ctx and the call's deadlines.
func (r *run) pause(ctx context.Context, delay time.Duration, d *deadlines) (*runtime.Error, error) {
	t := time.NewTimer(delay)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			return nil, nil
		case <-ctx.Done():
			return nil, r.ctxErr(ctx)
		case <-d.backstop.C:
			return r.overdue(d), nil
		case <-d.pending.C:
			if stuck := r.stuck(ctx); stuck != nil {
				return stuck, nil
			}
		}
	}
}

func (r *run) ctxErr(ctx context.Context) error {
	return fmt.Errorf("kubernetes_job: Job %s/%s: %w", r.key.namespace, r.key.name, ctx.Err())
}

func (r *run) overdue(d *deadlines) *runtime.Error {
	return runtime.Errorf(runtime.KindTimeout, "the Job did not finish within its deadline of %s", d.limit)
}

// events consumes one watch until the Job finishes (returned), something fails, or the watch ends (all nil).
// progress reports whether the watch delivered a change or a bookmark: a working watch.
func (r *run) events(ctx context.Context, w watch.Interface, d *deadlines) (job *batchv1.Job, stuck *runtime.Error, progress bool, err error) {
	for {
		select {
		case <-ctx.Done():
			return nil, nil, progress, r.ctxErr(ctx)
		case <-d.backstop.C:
			return nil, r.overdue(d), progress, nil
		case <-d.pending.C:
			if stuck := r.stuck(ctx); stuck != nil {
				return nil, stuck, progress, nil
			}
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil, nil, progress, nil
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				if j, ok := ev.Object.(*batchv1.Job); ok && j.Name == r.key.name {
					if done, _ := finished(j); done {
						return j, nil, true, nil
					}
				}
				// A new watch replays the Job as Added: only a modification shows the watch working.
				progress = progress || ev.Type == watch.Modified
			case watch.Bookmark:
				progress = true
			case watch.Deleted:
				if j, ok := ev.Object.(*batchv1.Job); ok && j.Name == r.key.name {
					return nil, r.gone(), true, nil
				}
			case watch.Error:
				r.i.logger.DebugContext(ctx, "kubernetes_job: the watch ended; resuming", "namespace", r.key.namespace,
					"job", r.key.name, "error", apierrors.FromObject(ev.Object))
				return nil, nil, progress, nil
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
	ctx, cancel := context.WithTimeout(ctx, r.i.b.requestTimeout())
	defer cancel()
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

// log reads at most limit bytes of a container's log (the last tailLines lines when set), within the backend's
// request timeout.
func (r *run) log(ctx context.Context, pod, container string, limit int64, tailLines *int64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, r.i.b.requestTimeout())
	defer cancel()
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

// backoff spaces out the watches of a call when they fail or end at once.
type backoff struct{ d time.Duration }

func newBackoff() *backoff { return &backoff{d: 100 * time.Millisecond} }
func (b *backoff) reset()  { b.d = 100 * time.Millisecond }

// next returns the current delay and doubles it, up to 5s.
func (b *backoff) next() time.Duration {
	d := b.d
	b.d = min(2*b.d, 5*time.Second)
	return d
}
