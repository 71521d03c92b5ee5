// Package kubernetesjob is the kubernetes_job action backend (SPEC §7.7): each call runs one Kubernetes Job, waits
// for it by watch and returns what its container reported.
//
// client-go is heavy, so the root package does not import this package: a host enables the backend with an import,
// and gives it a client by registering a configured Backend:
//
//	import "github.com/commonagents-go/tool/runtime/kubernetesjob"
//
//	client, err := kubernetesjob.NewClient("") // in-cluster, else $KUBECONFIG or ~/.kube/config
//	jobs := &kubernetesjob.Backend{Client: client, Namespaces: []string{"agent-jobs"}}
//	t, err := tool.Load(ctx, manifest, tool.WithRuntimes(jobs.Registry(nil)))
//
// The import alone registers a Backend without a client in runtime.Default(): manifests load and are fully
// validated, but a call fails (unrecoverable) until the host supplies a client.
package kubernetesjob

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/commonagents-go/tool/runtime"
	"github.com/commonagents-go/tool/runtime/kubernetesjob/jobspec"
)

// Kind is the execute-block key of this backend.
const Kind = jobspec.Kind

func init() { runtime.Default().MustRegister(&Backend{}) }

// The defaults of SPEC §14 and of the Job fields a manifest leaves unset.
const (
	// DefaultPendingTimeout is how long a Job's pod may stay Pending before the call fails.
	DefaultPendingTimeout = 5 * time.Minute
	// DefaultActiveDeadline becomes activeDeadlineSeconds when the spec sets none.
	DefaultActiveDeadline = 10 * time.Minute
	// DefaultTTLAfterFinished becomes ttlSecondsAfterFinished when the spec sets none: the cluster removes a
	// finished Job the backend could not delete (or was told to keep).
	DefaultTTLAfterFinished = time.Hour
	// DefaultLogTailBytes bounds the log tail quoted in a failed call's error.
	DefaultLogTailBytes = 2 << 10
	// DefaultResultBytes bounds a result read from a log when the host's Limits set no response size.
	DefaultResultBytes = 10 << 20
	// DefaultRequestTimeout bounds one API request (a create, a get, a list, reading a log).
	DefaultRequestTimeout = 30 * time.Second
)

// Backend implements runtime.Runtime for kubernetes_job. Its fields are the host's options; a Backend must not be
// changed once a Tool uses it. It is safe for concurrent use.
type Backend struct {
	// Client talks to the cluster (NewClient builds one; tests use client-go's fake clientset). Without it,
	// manifests still load but Initialize fails with an unrecoverable error.
	Client kubernetes.Interface
	// Namespaces lists the namespaces Jobs may run in; empty allows every namespace. A call whose namespace
	// renders to another one gets a recoverable denied error and creates nothing (SPEC §12.7).
	Namespaces []string
	// PendingTimeout bounds how long the Job may have no pod past Pending (image pull errors, an unschedulable
	// pod); 0 means DefaultPendingTimeout.
	PendingTimeout time.Duration
	// ActiveDeadline becomes the Job's activeDeadlineSeconds when the spec sets none; 0 means
	// DefaultActiveDeadline. The call also stops waiting a minute after the Job's deadline, should the cluster
	// fail to end it.
	ActiveDeadline time.Duration
	// BackoffLimit becomes the Job's backoffLimit when the spec sets none; nil means 0: a failed pod fails the
	// call at once and the LLM decides whether to retry.
	BackoffLimit *int32
	// TTLAfterFinished becomes ttlSecondsAfterFinished when the spec sets none; 0 means DefaultTTLAfterFinished.
	TTLAfterFinished time.Duration
	// Keep leaves finished Jobs in the cluster after their result is read (they still expire by their TTL).
	// Jobs stopped by a cancellation or by Task.Close are deleted regardless.
	Keep bool
	// LogTailBytes bounds the log tail quoted in a failed call's error; 0 means DefaultLogTailBytes.
	LogTailBytes int
	// RequestTimeout bounds each API request of a call (a create, a get, a list, reading a log; not the watch,
	// which the call's own deadlines bound); 0 means DefaultRequestTimeout. A request that times out is a
	// recoverable unavailable error.
	RequestTimeout time.Duration
}

// Kind returns "kubernetes_job".
func (*Backend) Kind() string { return Kind }

// Registry returns a copy of base (runtime.Default() when nil) in which b is the kubernetes_job backend, for
// tool.WithRuntimes.
func (b *Backend) Registry(base *runtime.Registry) *runtime.Registry {
	if base == nil {
		base = runtime.Default()
	}
	r := runtime.NewRegistry()
	for _, kind := range base.Kinds() {
		if rt, ok := base.Lookup(kind); ok && kind != Kind {
			r.MustRegister(rt)
		}
	}
	r.MustRegister(b)
	return r
}

// ErrNoClient is returned (wrapped, unrecoverable) by Initialize when the Backend has no Client.
var ErrNoClient = errors.New("kubernetes_job: no Kubernetes client: register a kubernetesjob.Backend with a Client " +
	"(tool.WithRuntimes(backend.Registry(nil)))")

// Initialize returns the task's instance. It does no I/O except reading the namespaces an earlier process of the
// same task created Jobs in, from the task state, so Teardown finds those Jobs too.
func (b *Backend) Initialize(ctx context.Context, in *runtime.Init) (runtime.Instance, error) {
	if b.Client == nil {
		return nil, runtime.Unrecoverable(ErrNoClient)
	}
	i := &instance{b: b, client: b.Client, taskID: in.TaskID, tool: in.Tool, toolNS: in.ToolNamespace, limits: in.Limits, state: in.State,
		observe: in.Observe, logger: in.Logger, namespaces: map[string]bool{}, running: map[jobKey]bool{}}
	if in.State != nil {
		data, err := in.State.Load(ctx)
		if err != nil {
			return nil, runtime.Unrecoverable(fmt.Errorf("kubernetes_job: reading task state: %w", err))
		}
		for _, ns := range decodeState(data) {
			i.namespaces[ns] = true
		}
	}
	return i, nil
}

func (b *Backend) allowed(ns string) bool {
	return len(b.Namespaces) == 0 || slices.Contains(b.Namespaces, ns)
}

func (b *Backend) pendingTimeout() time.Duration {
	return orDefault(b.PendingTimeout, DefaultPendingTimeout)
}
func (b *Backend) activeDeadline() time.Duration {
	return orDefault(b.ActiveDeadline, DefaultActiveDeadline)
}
func (b *Backend) requestTimeout() time.Duration {
	return orDefault(b.RequestTimeout, DefaultRequestTimeout)
}
func (b *Backend) ttl() time.Duration { return orDefault(b.TTLAfterFinished, DefaultTTLAfterFinished) }

func (b *Backend) logTailBytes() int {
	if b.LogTailBytes > 0 {
		return b.LogTailBytes
	}
	return DefaultLogTailBytes
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

var (
	_ runtime.Runtime         = (*Backend)(nil)
	_ runtime.SharedValidator = (*Backend)(nil)
	_ runtime.Describer       = (*Action)(nil)
	_ runtime.Instance        = (*instance)(nil)
)

// ConfigSchema returns the JSON Schema of the kubernetes_job blocks: the same as jobspec.Validator's.
func (*Backend) ConfigSchema() runtime.ConfigSchema { return jobspec.Validator{}.ConfigSchema() }
