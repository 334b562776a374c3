package conformance

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/conformance"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/vmss"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/azurefake"
)

// The scale set's resource group, node-group label (kOps's: kOps on Azure
// runs an instance group as a scale set) and marketplace images.
const (
	vmssGroup = "rg-nodes"
	vmssLabel = "kops.k8s.io/instancegroup"
	vmssOld   = "Canonical:ubuntu-24_04-lts:server:24.04.202501010"
	vmssNew   = "Canonical:ubuntu-24_04-lts:server:24.04.202502010"
)

// TestVMSSConformance runs the suite over provider vmss and the scale
// sets of sim/azurefake: a Uniform scale set of three instances in three
// zones, upgraded to a new image.
func TestVMSSConformance(t *testing.T) {
	conformance.Run(t, conformance.Harness{
		Provider:  vmss.Name,
		NodeGroup: "ng",
		Args:      []string{"--image", vmssNew},
		Nodes:     3,
		Setup:     setUpVMSS,
	})
}

// startVMSS starts the fake with a scale set "ng" of count instances on
// image, labelled as kOps's instance group "ng", and points the provider
// at it.
func startVMSS(t *testing.T, client kubernetes.Interface, o azurefake.Options, count int, image string) *azurefake.Server {
	t.Helper()
	o.PollEvery = 20 * time.Millisecond
	srv, err := azurefake.Start(context.Background(), client, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	t.Setenv(vmss.EndpointEnv, srv.URL)
	t.Setenv(vmss.NoAuthEnv, "true")
	img, err := vmss.ParseImage(image)
	if err != nil {
		t.Fatal(err)
	}
	spec := azurefake.ScaleSetSpec{ResourceGroup: vmssGroup, Name: "ng", ComputerNamePrefix: "ng", Capacity: count,
		Zones: []string{"1", "2", "3"}, Image: img, NodeLabels: map[string]string{vmssLabel: "ng"}}
	if err := srv.CreateScaleSet(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	// On a subnet with room, so that every plan reads its virtual
	// network's usages.
	subnet := srv.CreateSubnet(azurefake.SubnetSpec{ResourceGroup: "net-rg", VNet: "vnet", Name: "nodes", PrefixBits: 16})
	if err := srv.SetScaleSetSubnet(vmssGroup, "ng", subnet, 1); err != nil {
		t.Fatal(err)
	}
	return srv
}

func setUpVMSS(t *testing.T, client kubernetes.Interface, o conformance.Options) conformance.Env {
	t.Helper()
	srv := startVMSS(t, client, azurefake.Options{Faults: o.Faults, FaultSeed: o.Seed, RetryAfter: time.Second}, 3, vmssOld)
	env := conformance.Env{
		Changes: srv.ChangingCalls,
		Current: func(n *corev1.Node) bool { return vmssCurrent(srv, n.Name, vmssNew) },
	}
	if o.Faults > 0 {
		env.Faults = srv.Faults
	}
	return env
}

// vmssCurrent reports whether the instance of a node runs image and its
// scale set's latest model.
func vmssCurrent(srv *azurefake.Server, node, image string) bool {
	for _, set := range srv.ScaleSetNames(vmssGroup) {
		ins, _ := srv.ScaleSetInstances(vmssGroup, set)
		for _, in := range ins {
			if in.Name == node {
				return in.Image == image && in.LatestModelApplied && in.State == "Succeeded"
			}
		}
	}
	return false
}
