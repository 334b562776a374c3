package plugin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/metadata"
	metadatafake "k8s.io/client-go/metadata/fake"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// fakeSource is a kubeconfig and a cluster of metadata objects.
type fakeSource struct {
	config  clientcmdapi.Config
	objects []runtime.Object
}

func (f *fakeSource) Kubeconfig() (clientcmdapi.Config, error) { return f.config, nil }

func (f *fakeSource) Metadata() (metadata.Interface, error) {
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		return nil, err
	}
	return metadatafake.NewSimpleMetadataClient(scheme, f.objects...), nil
}

func partial(kind, namespace, name string, labels, annotations map[string]string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels, Annotations: annotations},
	}
}

func demoSource() *fakeSource {
	src := &fakeSource{config: clientcmdapi.Config{
		Contexts:  map[string]*clientcmdapi.Context{"sim": {Cluster: "sim-cluster"}, "prod": {Cluster: "prod-cluster"}},
		Clusters:  map[string]*clientcmdapi.Cluster{"sim-cluster": {Server: "https://127.0.0.1:6443"}, "prod-cluster": {Server: "https://prod"}},
		AuthInfos: map[string]*clientcmdapi.AuthInfo{"admin": {}},
	}}
	for i := range 9 {
		src.objects = append(src.objects, partial("Node", "", fmt.Sprintf("demo-%d", i),
			map[string]string{"eks.amazonaws.com/nodegroup": "demo", "alpha.eksctl.io/nodegroup-name": "demo", "pool": "a"}, nil))
	}
	for i := range 2 {
		src.objects = append(src.objects, partial("Node", "", fmt.Sprintf("kp-%d", i), map[string]string{"karpenter.sh/nodepool": "spot", "pool": "b"}, nil))
	}
	src.objects = append(src.objects,
		partial("Node", "", "control-plane", nil, nil),
		partial("Namespace", "", "default", nil, nil),
		partial("Namespace", "", "kube-system", nil, nil),
		partial("Namespace", "", "shop", nil, nil),
		partial("ConfigMap", "kube-system", "nodeupgrade-demo", map[string]string{state.ManagedByLabel: "kubectl-nodeupgrade"}, map[string]string{state.GroupAnnotation: "demo"}),
		partial("ConfigMap", "kube-system", "nodeupgrade-0a1b", map[string]string{state.ManagedByLabel: "kubectl-nodeupgrade"}, map[string]string{state.GroupAnnotation: "-l pool=b"}),
		partial("ConfigMap", "kube-system", "other", nil, nil),
		partial("ConfigMap", "upgrades", "nodeupgrade-batch", map[string]string{state.ManagedByLabel: "kubectl-nodeupgrade"}, map[string]string{state.GroupAnnotation: "batch"}),
	)
	return src
}

// complete runs cobra's __complete the way kubectl_complete-nodeupgrade
// does, and returns the candidates and the directive line.
func complete(t *testing.T, src completionSource, args ...string) (candidates []string, directive string) {
	t.Helper()
	var out bytes.Buffer
	streams := genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &bytes.Buffer{}}
	root := newRootCommand(genericclioptions.NewConfigFlags(false), streams)
	registerCompletions(root, src)
	root.SetArgs(append([]string{"__complete"}, args...))
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	return lines[:len(lines)-1], lines[len(lines)-1]
}

func TestCompletion(t *testing.T) {
	noFiles, noFilesNoSpace := ":4", ":6"
	tests := []struct {
		name      string
		args      []string
		want      []string
		directive string
	}{
		{"plan: node groups, detected labels, one per group", []string{"plan", ""}, []string{"demo\t9 nodes, eks.amazonaws.com/nodegroup", "spot\t2 nodes, karpenter.sh/nodepool"}, noFiles},
		{"run: by prefix", []string{"run", "d"}, []string{"demo\t9 nodes, eks.amazonaws.com/nodegroup"}, noFiles},
		{"check: --nodegroup-label given", []string{"check", "--nodegroup-label", "pool", ""}, []string{"a\t9 nodes, pool", "b\t2 nodes, pool"}, noFiles},
		{"plan: nothing after NODEGROUP", []string{"plan", "demo", ""}, nil, noFiles},
		{"plan: nothing with -l", []string{"plan", "-l", "pool=a", ""}, nil, noFiles},
		{"status: recorded groups", []string{"status", ""}, []string{"demo"}, noFiles},
		{"resume: recorded groups of --state-namespace", []string{"resume", "--state-namespace", "upgrades", ""}, []string{"batch"}, noFiles},
		{"--strategy", []string{"run", "demo", "--strategy", "s"}, []string{"surge\tGKE's: one zone at a time, per node a surge node first", "short-lived\tonly point the group at the target: nothing is drained, old nodes go away on their own"}, noFiles},
		{"--provider", []string{"plan", "demo", "--provider", ""}, []string{"aks\tAKS upgrades the agent pool itself (its surge upgrade), with the run's upgrade settings", "aws\tterminate the instance; its Auto Scaling group launches the replacement", "fakecloud\tterminate the fake machine; its group launches the target", "gce\trecreate the instance; its managed instance group replaces it", "gke\tGKE upgrades the node pool itself (nodePools.update), with the run's upgrade settings", "karpenter\tdelete the drained node's NodeClaim; Karpenter launches for its pods and terminates the node (its drift and consolidation held off for the pool during the run)", "vmss\tbring the instance to the scale set's latest model (manualupgrade: reimaged under its name)", "none\tdelete the Node object, or with --delete-node=false leave it cordoned"}, noFiles},
		// contract_test.go's provider, registered by its import alone.
		{"--fake-image, the test provider's own values", []string{"plan", "demo", "--fake-image", ""}, []string{"img-a", "img-b"}, noFiles},
		{"--ami completes no file", []string{"plan", "demo", "--ami", ""}, nil, noFiles},
		{"--launch-template-version", []string{"plan", "demo", "--launch-template-version", "$"}, []string{"$Default", "$Latest"}, noFiles},
		{"--order", []string{"plan", "demo", "--order", ""}, []string{"zone-balanced", "random"}, noFiles},
		{"--ignore-check", []string{"run", "demo", "--ignore-check", "single"}, []string{"single-replica\tBlocker"}, noFiles},
		{"--nodegroup-label", []string{"plan", "--nodegroup-label", "karp"}, []string{"karpenter.sh/nodepool"}, noFiles},
		{"-o of plan", []string{"plan", "demo", "-o", ""}, []string{"wide", "json", "yaml", "name", "jsonpath=", "jsonpath-file=", "go-template=", "go-template-file="}, noFiles},
		{"-o of check has no wide", []string{"check", "demo", "-o", ""}, []string{"json", "yaml", "name", "jsonpath=", "jsonpath-file=", "go-template=", "go-template-file="}, noFiles},
		{"-o of status has wide", []string{"status", "-o", "w"}, []string{"wide"}, noFiles},
		{"-o template formats without a space", []string{"status", "--output", "js"}, []string{"json", "jsonpath=", "jsonpath-file="}, noFiles},
		{"-o jsonpath only", []string{"status", "-o", "jsonpath"}, []string{"jsonpath=", "jsonpath-file="}, noFilesNoSpace},
		{"-o of version", []string{"version", "-o", ""}, []string{"json", "yaml", "jsonpath=", "jsonpath-file=", "go-template=", "go-template-file="}, noFiles},
		{"--context", []string{"plan", "--context", ""}, []string{"prod\tprod-cluster", "sim\tsim-cluster"}, noFiles},
		{"--cluster", []string{"status", "--cluster", "s"}, []string{"sim-cluster\thttps://127.0.0.1:6443"}, noFiles},
		{"--user", []string{"status", "--user", ""}, []string{"admin"}, noFiles},
		{"-n", []string{"check", "demo", "-n", ""}, []string{"default", "kube-system", "shop"}, noFiles},
		{"--state-namespace", []string{"status", "--state-namespace", "kube"}, []string{"kube-system"}, noFiles},
		{"--ami completes no file names", []string{"plan", "demo", "--ami", ""}, nil, noFiles},
		{"--target-label completes no file names", []string{"run", "demo", "--target-label", ""}, nil, noFiles},
		{"--server (the root's) completes no file names", []string{"status", "--server", ""}, nil, noFiles},
		{"--plan-file completes file names", []string{"run", "--plan-file", ""}, nil, ":0"},
		{"--kubeconfig completes file names", []string{"plan", "--kubeconfig", ""}, nil, ":0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, directive := complete(t, demoSource(), tc.args...)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") || directive != tc.directive {
				t.Errorf("got %q %s, want %q %s", got, directive, tc.want, tc.directive)
			}
		})
	}
	t.Run("every check name", func(t *testing.T) {
		got, _ := complete(t, demoSource(), "run", "demo", "--ignore-check", "")
		if len(got) != len(check.Names()) {
			t.Errorf("%d candidates for %d checks", len(got), len(check.Names()))
		}
	})
}

func TestUsageLinesNameKubectlNodeupgrade(t *testing.T) {
	root := NewCmdNodeUpgrade(genericiooptions.NewTestIOStreamsDiscard())
	walk(root, func(c *cobra.Command) {
		if !strings.HasPrefix(c.UseLine(), "kubectl nodeupgrade") {
			t.Errorf("usage line %q", c.UseLine())
		}
	})
}

// BenchmarkNodeGroupCompletion is the work of one TAB on NODEGROUP of a
// 5,000-node cluster once the metadata-only list has arrived, and reports
// the size of that list per node (names, labels, annotations; no spec or
// status).
func BenchmarkNodeGroupCompletion(b *testing.B) {
	const n = 5000
	nodes := make([]metav1.PartialObjectMetadata, n)
	for i := range nodes {
		labels := map[string]string{
			"eks.amazonaws.com/nodegroup":       fmt.Sprintf("group-%d", i%40),
			"eks.amazonaws.com/nodegroup-image": "ami-0123456789abcdef0",
			"topology.kubernetes.io/zone":       fmt.Sprintf("us-east-1%c", 'a'+i%3),
			"topology.kubernetes.io/region":     "us-east-1",
			"node.kubernetes.io/instance-type":  "m6i.xlarge",
			"kubernetes.io/hostname":            fmt.Sprintf("ip-10-0-%d-%d.ec2.internal", i/250, i%250),
			"kubernetes.io/os":                  "linux",
			"kubernetes.io/arch":                "amd64",
		}
		nodes[i] = *partial("Node", "", labels["kubernetes.io/hostname"], labels,
			map[string]string{"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"})
		nodes[i].UID = "0a1b2c3d-0000-0000-0000-000000000000"
		nodes[i].ResourceVersion = "123456789"
	}
	body, err := json.Marshal(metav1.PartialObjectMetadataList{Items: nodes})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if groups := nodeGroupsOf(nodes, ""); len(groups) != 40 {
			b.Fatalf("%d groups", len(groups))
		}
	}
	b.ReportMetric(float64(len(body))/n, "list-bytes/node")
}
