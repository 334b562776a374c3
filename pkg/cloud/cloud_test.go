package cloud

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// TestCapabilities: what a run may do follows from the interfaces the
// provider implements, each to its own bit, and from nothing else (load
// balancers, zone rebalancing, lingering machines and a followed default
// are handled by the run, not planned for).
func TestCapabilities(t *testing.T) {
	group := fakeGroup{fakeRemover: fakeRemover{fakeProvider: fakeProvider{name: "fake"}}, group: "workers"}
	remove, resize := plan.CapRemoveNodes, plan.CapRemoveNodes|plan.CapResize
	for _, tc := range []struct {
		name string
		p    Provider
		want plan.Capability
	}{
		{"a provider that can do nothing", &fakeProvider{name: "fake"}, 0},
		{"provider none removes nodes", &None{}, remove},
		{"a remover", &fakeRemover{}, remove},
		{"a remover behind load balancers", &fakeDeregisterer{}, remove},
		{"a resizable group", &group, resize},
		{"a group that rebalances its zones", &fakeRebalancer{group}, resize},
		{"a group whose machines linger on their way out", &fakeDepartures{group}, resize},
		{"a group that follows its template's default", &fakeFollower{group}, resize},
		{"a group that stands up a green group", &fakeBlueGreen{fakeGroup: group}, resize | plan.CapNewGroups},
		// An EKS managed node group: its service updates it in place and
		// owns its sizes, yet a green group can stand beside it.
		{"a service's group that stands up a green group, never resized", struct {
			*fakeManaged
			poolReads
			greens
		}{fakeManaged: &fakeManaged{group: "pool"}}, plan.CapManagedUpdate | plan.CapNewGroups},
		{"a service that runs the update itself", &fakeManaged{group: "pool"}, plan.CapManagedUpdate},
		{"a service with every control", struct {
			*fakeManaged
			cancels
			resumes
			rollsBack
			completes
		}{fakeManaged: &fakeManaged{group: "pool"}}, plan.CapManagedUpdate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Capabilities(tc.p); got != tc.want {
				t.Errorf("Capabilities = %b, want %b", got, tc.want)
			}
		})
	}
}

// TestManagedControls: the plan and the commands name exactly the
// controls the service offers, in the commands' order.
func TestManagedControls(t *testing.T) {
	m := &fakeManaged{group: "pool"}
	for _, tc := range []struct {
		name string
		p    Provider
		want []string
	}{
		{"a service without controls", m, nil},
		{"a service that can only cancel", struct {
			*fakeManaged
			cancels
		}{m, cancels{}}, []string{"cancel"}},
		{"a service that resumes and rolls back", struct {
			*fakeManaged
			rollsBack
			resumes
		}{m, rollsBack{}, resumes{}}, []string{"resume", "rollback"}},
		{"a service that can only end a soak", struct {
			*fakeManaged
			completes
		}{m, completes{}}, []string{"complete"}},
		{"a service with every control", struct {
			*fakeManaged
			completes
			rollsBack
			resumes
			cancels
		}{m, completes{}, rollsBack{}, resumes{}, cancels{}}, []string{"cancel", "resume", "rollback", "complete"}},
		{"provider none", &None{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ManagedControls(tc.p); !slices.Equal(got, tc.want) {
				t.Errorf("ManagedControls = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestGroupName: messages and the record name the group a provider works
// on, whatever kind of group it is; provider none has none.
func TestGroupName(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Provider
		want string
	}{
		{"provider none", &None{}, ""},
		{"a remover without a group", &fakeRemover{}, ""},
		{"a resizable group", &fakeGroup{group: "asg-workers"}, "asg-workers"},
		{"a green-capable group", &fakeBlueGreen{fakeGroup: fakeGroup{group: "asg-blue"}}, "asg-blue"},
		{"a service's group", &fakeManaged{group: "pool-a"}, "pool-a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := GroupName(tc.p); got != tc.want {
				t.Errorf("GroupName = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestOpenGroup: the plan's view says what the provider Open returned can
// do, whatever the cloud put there; an error of Open comes back as it is.
func TestOpenGroup(t *testing.T) {
	refused := fmt.Errorf("cannot find the group: %w", ErrNoGroup)
	for _, tc := range []struct {
		name    string
		cloud   *fakeCloud
		wantCan plan.Capability
		wantErr error
	}{
		{"a resizable group", &fakeCloud{name: "fake", provider: &fakeGroup{group: "g"}}, plan.CapRemoveNodes | plan.CapResize, nil},
		{"a service's group", &fakeCloud{name: "fake", provider: &fakeManaged{group: "g"}}, plan.CapManagedUpdate, nil},
		{"machines in no group", &fakeCloud{name: "fake", openErr: refused}, 0, ErrNoGroup},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := plan.CloudTarget{Group: "g"}
			cg, p, err := OpenGroup(context.Background(), tc.cloud, fake.NewClientset(), nil, target)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || cg != nil || p != nil {
					t.Fatalf("OpenGroup = %v, %v, %v; want nothing and %v", cg, p, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cg.Can != tc.wantCan || cg.Group != "g" || p != tc.cloud.provider {
				t.Errorf("OpenGroup = %+v, %v; want Can %b for group g and the cloud's provider", cg, p, tc.wantCan)
			}
		})
	}
}

// TestRegister: --provider takes every registered cloud by name, sorted,
// and none last; a name no cloud has is not found.
func TestRegister(t *testing.T) {
	beta, alpha := &fakeCloud{name: "beta"}, plainCloud{name: "alpha"}
	registered(t, beta, alpha)
	if got, want := Names(), []string{"alpha", "beta", NoneName}; !slices.Equal(got, want) {
		t.Errorf("Names = %q, want %q", got, want)
	}
	for _, tc := range []struct {
		name   string
		want   Cloud
		wantOK bool
	}{
		{"beta", beta, true},
		{"alpha", alpha, true},
		{NoneName, nil, false},
		{"gce", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, ok := Lookup(tc.name); ok != tc.wantOK || got != tc.want {
				t.Errorf("Lookup(%q) = %v, %v; want %v, %v", tc.name, got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

// TestRegisterNodeGroupLabels: a cloud's own node group labels are looked
// up after those registered before, in its order, before kOps', once
// however often they are registered.
func TestRegisterNodeGroupLabels(t *testing.T) {
	saved := slices.Clone(nodeGroupLabels)
	t.Cleanup(func() { nodeGroupLabels = saved })
	registered(t, labelledCloud{plainCloud{name: "alpha"}}, labelledCloud{plainCloud{name: "alpha-again"}}, plainCloud{name: "beta"})
	want := append(slices.Clone(saved), "zeta.example/group", "alpha.example/pool", "kops.k8s.io/instancegroup")
	if got := NodeGroupLabels(); !slices.Equal(got, want) {
		t.Errorf("NodeGroupLabels() = %q, want %q", got, want)
	}
}

// labelledCloud is a cloud whose nodes carry its own node group labels.
type labelledCloud struct{ plainCloud }

func (labelledCloud) NodeGroupLabels() []string {
	return []string{"zeta.example/group", "alpha.example/pool"}
}

// TestDetect: the provider is the cloud that owns every node; nodes of
// two clouds, or of none we know, or no nodes, get provider none.
func TestDetect(t *testing.T) {
	registered(t, &fakeCloud{name: "alpha"}, plainCloud{name: "beta"})
	nodes := func(ids ...string) []corev1.Node {
		var out []corev1.Node
		for _, id := range ids {
			out = append(out, corev1.Node{Spec: corev1.NodeSpec{ProviderID: id}})
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		nodes []corev1.Node
		want  string
	}{
		{"no nodes", nil, NoneName},
		{"every node alpha's", nodes("alpha://a/1", "alpha://a/2"), "alpha"},
		{"every node beta's", nodes("beta://b/1"), "beta"},
		{"nodes of two clouds", nodes("alpha://a/1", "beta://b/1"), NoneName},
		{"one node no cloud owns", nodes("alpha://a/1", "kwok://n-2"), NoneName},
		{"a node without a provider ID", nodes("alpha://a/1", ""), NoneName},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Detect(tc.nodes); got != tc.want {
				t.Errorf("Detect = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestGroupCloud: deleting the Node object of a machine in a group of
// aws, azure or gce leaves the machine running; other schemes (kwok,
// kind) and no provider ID name no such cloud.
func TestGroupCloud(t *testing.T) {
	for _, tc := range []struct{ providerID, want string }{
		{"aws:///us-east-1a/i-0abc", "aws"},
		{"gce://project/europe-west1-b/vm-1", "gce"},
		{"azure:///subscriptions/s/resourceGroups/r/providers/Microsoft.Compute/virtualMachineScaleSets/v/virtualMachines/0", "azure"},
		{"kwok://node-1", ""},
		{"kind://docker/kind/kind-worker", ""},
		{"aws", ""},
		{"", ""},
	} {
		t.Run(tc.providerID, func(t *testing.T) {
			if got := GroupCloud(tc.providerID); got != tc.want {
				t.Errorf("GroupCloud(%q) = %q, want %q", tc.providerID, got, tc.want)
			}
		})
	}
}
