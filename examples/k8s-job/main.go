// Command k8s-job runs a kubernetes_job action end to end without a cluster: client-go's fake clientset plays the
// Kubernetes API and a scripted controller (runtime/kubernetesjob/kubernetesjobtest) plays the Job controller. It
// shows the Job the backend creates, the result read from the container's termination message, a failing Job
// reported to the LLM as a recoverable error, and the Jobs deleted afterwards. It needs no flags and no network.
//
// Against a real cluster, replace the fake with kubernetesjob.NewClient("").
package main

import (
	"context"
	_ "embed"
	"fmt"
	"log"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/runtime/kubernetesjob"
	"github.com/commonagents-go/tool/runtime/kubernetesjob/kubernetesjobtest"
)

//go:embed report-job.yaml
var manifest []byte

func main() {
	ctx := context.Background()

	// The scripted controller: Q4 fails with a log, every other quarter succeeds with a JSON summary.
	cluster := kubernetesjobtest.NewCluster(func(job *batchv1.Job) kubernetesjobtest.Outcome {
		if slices.Contains(job.Spec.Template.Spec.Containers[0].Args, "Q4") {
			return kubernetesjobtest.Outcome{ExitCode: 2, Logs: "loading ledger\nerror: Q4 ledger is not closed yet\n"}
		}
		return kubernetesjobtest.Outcome{Message: `{"pages": 12, "revenue": "4.2M"}`, Logs: "rendered 12 pages\n"}
	})
	defer cluster.Close()

	// The host gives the backend its client and the namespaces Jobs may run in.
	jobs := &kubernetesjob.Backend{Client: cluster.Client, Namespaces: []string{"agent-jobs"}}
	t, err := tool.Load(ctx, manifest, tool.WithRuntimes(jobs.Registry(nil)),
		tool.WithSettings(map[string]any{"registry": "registry.example.com/reports"}))
	if err != nil {
		log.Fatal(err)
	}
	task, err := t.NewTask(ctx, tool.TaskConfig{ID: "task-42"})
	if err != nil {
		log.Fatal(err)
	}
	defer task.Close(ctx)

	res, err := task.Invoke(ctx, "render_report", map[string]any{"quarter": "Q3"})
	if err != nil {
		log.Fatal(err)
	}
	job := cluster.Created()[0]
	c := job.Spec.Template.Spec.Containers[0]
	fmt.Printf("created Job %s/%s\n  image %s\n  args  %s\n", job.Namespace, job.Name, c.Image, strings.Join(c.Args, " "))
	fmt.Printf("  labels task=%s action=%s\n", job.Labels[kubernetesjob.LabelTask], job.Labels[kubernetesjob.LabelAction])
	fmt.Printf("  backoffLimit %d, activeDeadlineSeconds %d, ttlSecondsAfterFinished %d\n",
		*job.Spec.BackoffLimit, *job.Spec.ActiveDeadlineSeconds, *job.Spec.TTLSecondsAfterFinished)
	fmt.Printf("result (from the %s): %s\n\n", res.ServerData["source"], res.OutputJSON)

	res, err = task.Invoke(ctx, "render_report", map[string]any{"quarter": "Q4"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("Q4: error %s:\n%s\n\n", res.Error.Kind, res.Error.Message)

	for _, d := range cluster.Deleted() {
		fmt.Printf("deleted Job %s/%s (propagation %s)\n", d.Namespace, d.Name, d.Propagation)
	}
}
