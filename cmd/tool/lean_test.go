package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestValidateChecksKubernetesJob: the command checks kubernetes_job blocks as a host that imports
// runtime/kubernetesjob does (the JobSpec decoded strictly, the namespace a DNS label), without linking client-go.
func TestValidateChecksKubernetesJob(t *testing.T) {
	t.Parallel()
	file := writeFile(t, "job.yaml", `kind: commonagents.info/v1beta2/tool
namespace: tests
name: jobs
description: Runs a job.
actions:
  - name: run
    description: Runs it.
    execute:
      kubernetes_job:
        namespace: Not_A_Label
        spec:
          bogus: 1
          template:
            spec:
              restartPolicy: Never
              containers:
                - name: main
                  image: busybox
`)
	code, stdout, _ := runTool(t, "validate", file)
	if code != exitProblem {
		t.Errorf("exit code %d, want %d", code, exitProblem)
	}
	for _, want := range []string{"actions[0].execute.kubernetes_job.namespace", "actions[0].execute.kubernetes_job.spec.bogus"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %s:\n%s", want, stdout)
		}
	}
}

// TestCommandLinksNoClientGo: the command registers jobspec.Validator, not package kubernetesjob, so client-go's
// weight (about 15 MiB of resident memory) stays out of serve-mcp.
func TestCommandLinksNoClientGo(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "github.com/commonagents-go/tool/runtime/kubernetesjob/jobspec\n") {
		t.Fatalf("go list output does not look like the command's dependencies:\n%s", out)
	}
	for line := range strings.Lines(string(out)) {
		if strings.HasPrefix(line, "k8s.io/client-go") || strings.HasSuffix(line, "runtime/kubernetesjob\n") {
			t.Errorf("the command depends on %s", strings.TrimSpace(line))
		}
	}
}

// TestInvokeKubernetesJobSaysWhy: a kubernetes_job call from the command fails as unrecoverable, saying that the
// command checks such actions but does not run them.
func TestInvokeKubernetesJobSaysWhy(t *testing.T) {
	t.Parallel()
	code, _, stderr := runTool(t, "invoke", okDir+"/k8s-job.yaml", "build_report",
		"--args", `{"region":"emea","since":"2026-01-01","until":"2026-01-31"}`)
	if code != exitProblem || !strings.Contains(stderr, "checks kubernetes_job actions but cannot run them") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}
