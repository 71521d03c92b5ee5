package kubernetesjob_test

import (
	"context"
	"fmt"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/runtime/kubernetesjob"
	"github.com/commonagents-go/tool/runtime/kubernetesjob/kubernetesjobtest"
)

var benchOutcome = kubernetesjobtest.Outcome{Message: `{"pages": 3}`}

// freshEvery bounds how many Jobs one fake cluster sees in a benchmark: client-go's fake tracker never forgets a
// stopped watcher, so each event costs more as Jobs accumulate. Both benchmarks start a new cluster as often.
const freshEvery = 50

// BenchmarkInvoke runs one Job per call through Task.Invoke against the fake cluster.
func BenchmarkInvoke(b *testing.B) {
	var c *kubernetesjobtest.Cluster
	var task *tool.Task
	fresh := func() {
		if c != nil {
			_ = task.Close(context.Background())
			c.Close()
		}
		c = kubernetesjobtest.NewCluster(always(benchOutcome))
		tl, err := tool.Load(context.Background(), []byte(manifest), tool.WithSettings(settings),
			tool.WithRuntimes((&kubernetesjob.Backend{Client: c.Client}).Registry(nil)))
		if err != nil {
			b.Fatal(err)
		}
		if task, err = tl.NewTask(context.Background(), tool.TaskConfig{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if i%freshEvery == 0 {
			b.StopTimer()
			fresh()
			b.StartTimer()
		}
		res, err := task.Invoke(context.Background(), "render_report", args)
		if err != nil || res.IsError {
			b.Fatal(err, res.Error)
		}
	}
	b.StopTimer()
	_ = task.Close(context.Background())
	c.Close()
}

// BenchmarkRawClientGo is the baseline: the same Job created, watched to completion, its pod's termination
// message read and the Job deleted with client-go directly, against the same fake cluster.
func BenchmarkRawClientGo(b *testing.B) {
	var c *kubernetesjobtest.Cluster
	ctx := context.Background()
	n := 0
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if i%freshEvery == 0 {
			b.StopTimer()
			if c != nil {
				c.Close()
			}
			c = kubernetesjobtest.NewCluster(always(benchOutcome))
			b.StartTimer()
		}
		jobs, pods := c.Client.BatchV1().Jobs("agent-jobs"), c.Client.CoreV1().Pods("agent-jobs")
		n++
		name := fmt.Sprintf("raw-%d", n)
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "agent-jobs"},
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: "Never",
				Containers: []corev1.Container{{Name: "main", Image: "registry.example/report:v2"}}}}}}
		w, err := jobs.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := jobs.Create(ctx, job, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		for ev := range w.ResultChan() {
			if j, ok := ev.Object.(*batchv1.Job); ok && ev.Type == watch.Modified && j.Name == name && len(j.Status.Conditions) > 0 {
				break
			}
		}
		w.Stop()
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + name})
		if err != nil || len(list.Items) == 0 || list.Items[0].Status.ContainerStatuses[0].State.Terminated.Message == "" {
			b.Fatal("no result", err)
		}
		policy := metav1.DeletePropagationBackground
		if err := jobs.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	c.Close()
}
