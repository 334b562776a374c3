package cloud_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/conformance"
)

// TestNoneConformance runs the provider conformance suite over provider
// none, whose "cloud" is the Node objects: it removes a drained node by
// deleting it, and nothing replaces it.
func TestNoneConformance(t *testing.T) {
	conformance.Run(t, conformance.Harness{
		Provider:       cloud.NoneName,
		NodeGroup:      "ng",
		NodeGroupLabel: "pool",
		TargetLabels:   map[string]string{"version": "2"},
		Nodes:          3,
		NoReplacement:  true,
		Setup:          setUpNone,
		QuietSetup:     true, // it adds a reactor
		NoFaults:       "its cloud is the Kubernetes API (the Node objects); the client's retries of its faults are client-go's, run against sim/faultproxy in the e2e tests",
	})
}

// setUpNone makes three nodes of group "ng" without the target label, and
// records the writes to nodes other than their kubelet's status.
func setUpNone(t *testing.T, client kubernetes.Interface, _ conformance.Options) conformance.Env {
	t.Helper()
	for i := 1; i <= 3; i++ {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ng-%d", i), Labels: map[string]string{"pool": "ng", "version": "1"}}}
		if _, err := client.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var changes []string
	client.(*fake.Clientset).PrependReactor("*", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" && a.GetSubresource() != "status" {
			mu.Lock()
			changes = append(changes, a.GetVerb()+" node")
			mu.Unlock()
		}
		return false, nil, nil
	})
	return conformance.Env{
		Changes: func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), changes...) },
		Current: func(n *corev1.Node) bool { return n.Labels["version"] == "2" },
	}
}
