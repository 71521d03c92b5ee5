// Package kubernetesjobtest is a fake Kubernetes cluster for the kubernetes_job backend: client-go's fake
// clientset with a scripted Job controller that creates each Job's pod and plays the outcome a test chooses
// (success with a termination message or a log, a failed container, a pod stuck Pending, an exceeded deadline).
// It is the httptest of runtime/kubernetesjob.
package kubernetesjobtest

import (
	"context"
	"fmt"
	"maps"
	"sync"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// Outcome is what the controller plays for one Job.
type Outcome struct {
	// Pending keeps the pod Pending for good: a container waiting reason such as "ImagePullBackOff" or
	// "ErrImagePull", or "Unschedulable" for a pod no node takes.
	Pending string
	// Hold, when not nil, keeps the pod Running until it is closed (or the Job is deleted).
	Hold <-chan struct{}
	// ExitCode is the main container's exit code: 0 completes the Job, anything else fails it
	// (BackoffLimitExceeded).
	ExitCode int32
	// Message is the main container's termination message; Logs is its log.
	Message, Logs string
	// DeadlineExceeded fails the Job with reason DeadlineExceeded once its pod runs.
	DeadlineExceeded bool
}

// Deletion is one Job delete request the cluster received.
type Deletion struct {
	Namespace, Name string
	// Propagation is the request's propagation policy, "" when it set none.
	Propagation metav1.DeletionPropagation
}

// Cluster is a fake cluster whose controller plays an Outcome per created Job. It is safe for concurrent use.
type Cluster struct {
	// Client is the clientset to give the backend.
	Client *fake.Clientset

	script func(*batchv1.Job) Outcome
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	seq     int
	created []*batchv1.Job
	deleted []Deletion
	logs    map[string][]byte // namespace/container → log
	running chan string
}

// NewCluster starts a cluster whose controller plays script(job) for every Job created. Close stops it.
func NewCluster(script func(job *batchv1.Job) Outcome) *Cluster {
	c := &Cluster{Client: fake.NewClientset(), script: script, logs: map[string][]byte{}, running: make(chan string, 64)}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	// Reactors run under the clientset's lock: they only record and hand work to goroutines.
	c.Client.PrependReactor("create", "jobs", c.onCreate)
	c.Client.PrependReactor("delete", "jobs", c.onDelete)
	c.Client.PrependReactor("get", "pods", c.onLog)
	return c
}

// Close stops the controller and waits for its goroutines.
func (c *Cluster) Close() {
	c.cancel()
	c.wg.Wait()
}

// Created returns the Jobs created so far, as the client sent them (with the name the cluster generated).
func (c *Cluster) Created() []*batchv1.Job {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*batchv1.Job, len(c.created))
	for i, j := range c.created {
		out[i] = j.DeepCopy()
	}
	return out
}

// Deleted returns the Job delete requests received so far.
func (c *Cluster) Deleted() []Deletion {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Deletion(nil), c.deleted...)
}

// Running receives the name of each Job whose pod starts running.
func (c *Cluster) Running() <-chan string { return c.running }

// Exists reports whether the Job is still in the cluster.
func (c *Cluster) Exists(namespace, name string) bool {
	_, err := c.Client.Tracker().Get(batchv1.SchemeGroupVersion.WithResource("jobs"), namespace, name)
	return err == nil
}

func (c *Cluster) onCreate(action k8stesting.Action) (bool, k8sruntime.Object, error) {
	job, ok := action.(k8stesting.CreateAction).GetObject().(*batchv1.Job)
	if !ok {
		return false, nil, nil
	}
	c.mu.Lock()
	c.seq++
	if job.Name == "" && job.GenerateName != "" { // the fake API server does not generate names
		job.Name = fmt.Sprintf("%s%05d", job.GenerateName, c.seq)
	}
	c.created = append(c.created, job.DeepCopy())
	c.mu.Unlock()
	outcome := c.script(job.DeepCopy())
	j := job.DeepCopy()
	c.wg.Go(func() { c.play(j, outcome) })
	return false, nil, nil // the tracker stores the Job
}

func (c *Cluster) onDelete(action k8stesting.Action) (bool, k8sruntime.Object, error) {
	d := action.(k8stesting.DeleteAction)
	var policy metav1.DeletionPropagation
	if p := d.GetDeleteOptions().PropagationPolicy; p != nil {
		policy = *p
	}
	c.mu.Lock()
	c.deleted = append(c.deleted, Deletion{Namespace: d.GetNamespace(), Name: d.GetName(), Propagation: policy})
	c.mu.Unlock()
	return false, nil, nil
}

// onLog answers pods/log with the log the controller recorded. client-go's fake does not pass the pod's name to
// reactors, so logs are kept per namespace and container: the last pod to finish there.
func (c *Cluster) onLog(action k8stesting.Action) (bool, k8sruntime.Object, error) {
	if action.GetSubresource() != "log" {
		return false, nil, nil
	}
	var container string
	if ga, ok := action.(k8stesting.GenericAction); ok {
		if opts, ok := ga.GetValue().(*corev1.PodLogOptions); ok {
			container = opts.Container
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return true, &k8sruntime.Unknown{Raw: c.logs[action.GetNamespace()+"/"+container]}, nil
}

// play is the controller for one Job: it creates the pod, moves it through its phases and sets the Job's status.
// It stops when the Job is deleted or the cluster closes.
func (c *Cluster) play(job *batchv1.Job, o Outcome) {
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	gone := c.watchDeletion(ctx, job, cancel)
	defer gone()
	pods := c.Client.CoreV1().Pods(job.Namespace)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: job.Name + "-pod", Namespace: job.Namespace,
			Labels: maps.Clone(job.Spec.Template.Labels)},
		Spec:   *job.Spec.Template.Spec.DeepCopy(),
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels["batch.kubernetes.io/job-name"], pod.Labels["job-name"] = job.Name, job.Name
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return
	}
	main := pod.Spec.Containers[0].Name
	if o.Pending != "" {
		if o.Pending == "Unschedulable" {
			pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
				Reason: "Unschedulable", Message: "0/3 nodes are available: 3 Insufficient cpu."}}
		} else {
			pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: main, State: corev1.ContainerState{
				Waiting: &corev1.ContainerStateWaiting{Reason: o.Pending, Message: "Back-off pulling image"}}}}
		}
		_, _ = pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		<-ctx.Done()
		return
	}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: main, Ready: true,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	if _, err := pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		return
	}
	if !c.setJob(ctx, job, func(s *batchv1.JobStatus) { s.Active = 1 }) {
		return
	}
	select {
	case c.running <- job.Name:
	default:
	}
	if o.Hold != nil {
		select {
		case <-o.Hold:
		case <-ctx.Done():
			return
		}
	}
	c.mu.Lock()
	c.logs[job.Namespace+"/"+main] = []byte(o.Logs)
	c.mu.Unlock()
	term := &corev1.ContainerStateTerminated{ExitCode: o.ExitCode, Message: o.Message, Reason: "Completed"}
	cond := batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}
	pod.Status.Phase = corev1.PodSucceeded
	switch {
	case o.DeadlineExceeded:
		term = &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error"}
		pod.Status.Phase = corev1.PodFailed
		cond = batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue,
			Reason: batchv1.JobReasonDeadlineExceeded, Message: "Job was active longer than specified deadline"}
	case o.ExitCode != 0:
		term.Reason = "Error"
		pod.Status.Phase = corev1.PodFailed
		cond = batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue,
			Reason: batchv1.JobReasonBackoffLimitExceeded, Message: "Job has reached the specified backoff limit"}
	}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: main, State: corev1.ContainerState{Terminated: term}}}
	if _, err := pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		return
	}
	c.setJob(ctx, job, func(s *batchv1.JobStatus) {
		s.Active = 0
		if cond.Type == batchv1.JobComplete {
			s.Succeeded = 1
		} else {
			s.Failed = 1
		}
		s.Conditions = append(s.Conditions, cond)
	})
}

// setJob updates the Job's status; it reports false when the Job is gone.
func (c *Cluster) setJob(ctx context.Context, job *batchv1.Job, change func(*batchv1.JobStatus)) bool {
	jobs := c.Client.BatchV1().Jobs(job.Namespace)
	cur, err := jobs.Get(ctx, job.Name, metav1.GetOptions{})
	if err != nil {
		return false
	}
	change(&cur.Status)
	_, err = jobs.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
	return err == nil
}

// watchDeletion cancels the Job's controller when the Job is deleted, and then deletes its pods as the garbage
// collector does with background propagation. The returned function stops watching.
func (c *Cluster) watchDeletion(ctx context.Context, job *batchv1.Job, cancel context.CancelFunc) func() {
	w, err := c.Client.BatchV1().Jobs(job.Namespace).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		cancel()
		return func() {}
	}
	done := make(chan struct{})
	c.wg.Go(func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					return
				}
				if j, isJob := ev.Object.(*batchv1.Job); isJob && ev.Type == watch.Deleted && j.Name == job.Name {
					cancel()
					c.collect(job)
					return
				}
			}
		}
	})
	return func() { w.Stop(); <-done }
}

// collect deletes the pods of a deleted Job.
func (c *Cluster) collect(job *batchv1.Job) {
	gvr := corev1.SchemeGroupVersion.WithResource("pods")
	err := c.Client.Tracker().Delete(gvr, job.Namespace, job.Name+"-pod")
	if err != nil && !apierrors.IsNotFound(err) {
		return
	}
}
