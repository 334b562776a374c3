package session

import (
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	_ "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/aws"
	_ "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/gce"
	_ "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/gke"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// TestFlagsOfAnotherCloudRefused: a target flag that picks one cloud is
// refused, naming the nodes' cloud and its target flags, when the nodes
// are another cloud's, before that cloud is opened (which would say "no
// AWS region configured" for gce:// nodes or advise --mig for EKS ones).
func TestFlagsOfAnotherCloudRefused(t *testing.T) {
	awsNode := corev1.Node{Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-0abc"}}
	gceNode := corev1.Node{Spec: corev1.NodeSpec{ProviderID: "gce://proj/us-central1-a/vm-1"}}
	gkeNode := *gceNode.DeepCopy()
	gkeNode.ObjectMeta = metav1.ObjectMeta{Labels: map[string]string{"cloud.google.com/gke-nodepool": "pool"}}
	for _, tc := range []struct {
		name   string
		target plan.CloudTarget
		flag   string
		node   corev1.Node
		want   string // "" for the cloud picked
		picked string
	}{
		{"--kubernetes-version on gce nodes", plan.CloudTarget{Options: map[string]string{"kubernetes-version": "1.31"}}, "kubernetes-version", gceNode,
			`cannot use --kubernetes-version (of --provider aws) on the nodes of provider gce: name the target with --image or --instance-template`, ""},
		{"--image on aws nodes", plan.CloudTarget{Image: "img"}, "image", awsNode,
			`cannot use --image (of --provider gce) on the nodes of provider aws: name the target with --ami, --launch-template-version, --kubernetes-version or --release-version`, ""},
		{"--ami on gke nodes", plan.CloudTarget{Image: "ami-1"}, "ami", gkeNode,
			`cannot use --ami (of --provider aws) on the nodes of provider gke: name the target with --node-version or --image-type`, ""},
		{"--ami on aws nodes", plan.CloudTarget{Image: "ami-1"}, "ami", awsNode, "", "aws"},
		{"--image on gce nodes", plan.CloudTarget{Image: "img"}, "image", gceNode, "", "gce"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Request{Given: map[string]bool{tc.flag: true}, Bound: cloud.BoundFlags()}
			r.Cloud = tc.target
			c, err := r.cloudFor([]corev1.Node{tc.node})
			if tc.want == "" {
				if err != nil || c == nil || c.Name() != tc.picked {
					t.Fatalf("got %v, %v; want cloud %q", c, err, tc.picked)
				}
				return
			}
			var usage *UsageError
			if !errors.As(err, &usage) || err.Error() != tc.want {
				t.Errorf("got %v\nwant usage error %q", err, tc.want)
			}
			if err != nil && strings.HasSuffix(err.Error(), ".") {
				t.Error("error ends with a period")
			}
		})
	}
}

// runsOwn is a group's service that runs the strategies named.
type runsOwn []plan.StrategyName

func (s runsOwn) Runs(strategy plan.StrategyName) bool { return slices.Contains(s, strategy) }
func (runsOwn) Plan(plan.Input, int, int) (*plan.ManagedPlan, error) {
	return nil, errors.New("not planned here")
}

// TestDefaultStrategyTheServiceDoesNotRun: with --strategy left to its
// default on a group whose service runs its own strategies but not it
// (a GKE node pool), the refusal names those it runs instead of blaming
// "--strategy eks", which was never given.
func TestDefaultStrategyTheServiceDoesNotRun(t *testing.T) {
	gke := &plan.CloudGroup{GroupID: plan.GroupID{Group: "pool-1", GroupKind: "GKE node pool"}, Managed: runsOwn{"surge", "blue-green"}}
	eks := &plan.CloudGroup{GroupID: plan.GroupID{Group: "ng", GroupKind: "EKS managed node group"}, Managed: runsOwn{"eks", "surge"}}
	for _, tc := range []struct {
		name     string
		strategy string
		given    bool
		cloud    *plan.CloudGroup
		want     string
	}{
		{"gke, no --strategy", string(plan.DefaultStrategy), false, gke, `no --strategy given, and the default, eks, is not one the GKE node pool "pool-1" takes: use --strategy surge or blue-green`},
		{"gke, --strategy eks given", string(plan.DefaultStrategy), true, gke, ""},
		{"gke, --strategy surge", "surge", true, gke, ""},
		{"eks managed, no --strategy", string(plan.DefaultStrategy), false, eks, ""},
		{"no cloud", string(plan.DefaultStrategy), false, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Request{Given: map[string]bool{"strategy": tc.given}}
			var err error
			if r.strategy, err = plan.LookupStrategy(tc.strategy); err != nil {
				t.Fatal(err)
			}
			err = r.refuseDefaultStrategy(plan.Input{Cloud: tc.cloud})
			var usage *UsageError
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (!errors.As(err, &usage) || err.Error() != tc.want):
				t.Errorf("got %v\nwant usage error %q", err, tc.want)
			}
		})
	}
}
