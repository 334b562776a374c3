package session

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	_ "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/aws"
	_ "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/gce"
	_ "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/gke"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/karpenter"
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

// TestProviderOfAnotherCloudOnKarpenterNodes: --provider aws on the nodes
// of a Karpenter NodePool (aws:/// provider IDs, no Auto Scaling group) is
// refused naming --provider karpenter, not with AWS's "no AWS region
// configured" once opened.
func TestProviderOfAnotherCloudOnKarpenterNodes(t *testing.T) {
	plain := corev1.Node{Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-0abc"}}
	karp := *plain.DeepCopy()
	karp.Labels = map[string]string{karpenter.NodePoolLabel: "default"}
	for _, tc := range []struct {
		name, provider string
		node           corev1.Node
		want           string // the cloud picked, or the refusal
	}{
		{"--provider aws on karpenter nodes", "aws", karp, `cannot use --provider aws on these nodes: provider karpenter serves them, whose controller replaces them itself; use --provider karpenter`},
		{"--provider gce on karpenter nodes", "gce", karp, `cannot use --provider gce on these nodes: provider karpenter serves them, whose controller replaces them itself; use --provider karpenter`},
		{"--provider karpenter", "karpenter", karp, "karpenter"},
		{"detected", "", karp, "karpenter"},
		{"--provider aws on plain aws nodes", "aws", plain, "aws"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Request{Given: map[string]bool{"provider": tc.provider != ""}, Bound: cloud.BoundFlags()}
			r.Provider = tc.provider
			c, err := r.cloudFor([]corev1.Node{tc.node})
			got := ""
			if c != nil {
				got = c.Name()
			}
			var usage *UsageError
			if err != nil && (!errors.As(err, &usage) || err.Error() != tc.want) || err == nil && got != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
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

// ownStrategy is a service with a strategy of its own, as a GKE pool
// set to SURGE with maxSurge 2 and maxUnavailable 1 has.
type ownStrategy struct{ runsOwn }

func (ownStrategy) OwnStrategy() plan.GroupStrategy {
	return plan.GroupStrategy{Strategy: plan.StrategySurge, MaxSurge: 2, MaxUnavailable: "1", From: "the pool's own upgrade strategy"}
}

// TestDefaultStrategyTheServiceDoesNotRun: with --strategy left to its
// default on a group whose service runs its own strategies but not it
// (a GKE node pool), the group's own strategy is taken, with its settings
// where no flag gives them; without one, the refusal names those it runs
// instead of blaming "--strategy eks", which was never given.
func TestDefaultStrategyTheServiceDoesNotRun(t *testing.T) {
	id := plan.GroupID{Group: "pool-1", GroupKind: "GKE node pool"}
	gke := &plan.CloudGroup{GroupID: id, Managed: cloud.ServiceOf(runsOwn{"surge", "blue-green"})}
	gkeOwn := &plan.CloudGroup{GroupID: id, Managed: cloud.ServiceOf(ownStrategy{runsOwn{"surge", "blue-green"}})}
	eks := &plan.CloudGroup{GroupID: plan.GroupID{Group: "ng", GroupKind: "EKS managed node group"}, Managed: cloud.ServiceOf(runsOwn{"eks", "surge"})}
	for _, tc := range []struct {
		name     string
		strategy string
		given    map[string]bool
		cloud    *plan.CloudGroup
		want     string
		// what the request then runs: strategy, max unavailable, where from
		wantRun string
	}{
		{"gke, no --strategy", string(plan.DefaultStrategy), nil, gke, `no --strategy given, and the default, eks, is not one the GKE node pool "pool-1" takes: use --strategy surge or blue-green`, ""},
		{"gke's own strategy, no --strategy", string(plan.DefaultStrategy), nil, gkeOwn, "", "surge 2 1 the pool's own upgrade strategy"},
		{"gke's own strategy, --max-unavailable given", string(plan.DefaultStrategy), map[string]bool{"max-unavailable": true}, gkeOwn, "", "surge 2 3 the pool's own upgrade strategy"},
		{"gke's own strategy, --max-surge given", string(plan.DefaultStrategy), map[string]bool{"max-surge": true}, gkeOwn, "", "surge 5 1 the pool's own upgrade strategy"},
		{"gke, --strategy eks given", string(plan.DefaultStrategy), map[string]bool{"strategy": true}, gkeOwn, "", "eks 0 3 "},
		{"gke, --strategy surge", "surge", map[string]bool{"strategy": true}, gkeOwn, "", "surge 0 3 "},
		{"eks managed, no --strategy", string(plan.DefaultStrategy), nil, eks, "", "eks 0 3 "},
		{"no cloud", string(plan.DefaultStrategy), nil, nil, "", "eks 0 3 "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Request{Given: map[string]bool{}}
			maps.Copy(r.Given, tc.given)
			r.MaxUnavailable, r.MaxSurge = "3", 5
			var err error
			if r.strategy, err = plan.LookupStrategy(tc.strategy); err != nil {
				t.Fatal(err)
			}
			in := plan.Input{Cloud: tc.cloud, Strategy: r.strategy.Name(), MaxUnavailable: "3"}
			err = r.defaultStrategy(&in)
			var usage *UsageError
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (!errors.As(err, &usage) || err.Error() != tc.want):
				t.Errorf("got %v\nwant usage error %q", err, tc.want)
			}
			if tc.want != "" {
				return
			}
			got := fmt.Sprintf("%s %d %s %s", in.Strategy, in.MaxSurge, in.MaxUnavailable, in.StrategyFrom)
			if got != tc.wantRun || r.strategy.Name() != in.Strategy || in.StrategyFrom != "" && plan.StrategyName(r.Request.Strategy) != in.Strategy {
				t.Errorf("runs %q (request %s, %s), want %q", got, r.strategy.Name(), r.Request.Strategy, tc.wantRun)
			}
		})
	}
}
