package kubernetesjob

import (
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// NewClient builds a clientset the way kubectl finds its cluster: from the kubeconfig file at path when path is
// not "", else from $KUBECONFIG or ~/.kube/config, else from the pod's service account when running in a cluster.
// It does no I/O beyond reading those files.
func NewClient(path string) (kubernetes.Interface, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubernetes_job: loading the Kubernetes client configuration: %w", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes_job: building the Kubernetes client: %w", err)
	}
	return cs, nil
}
