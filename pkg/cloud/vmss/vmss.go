// Package vmss is the provider of self-managed Kubernetes nodes on Azure
// Virtual Machine Scale Sets (no AKS): the run upgrades a Uniform scale
// set with the product's own strategies, as the Auto Scaling group and
// managed instance group paths do. It points the scale set's model at
// the target image (a PATCH of its imageReference), changes its capacity
// (sku.capacity), brings a drained instance to the latest model
// (manualupgrade: UpdateInstances, which reimages it under its instance
// ID and computer name) or deletes it with the capacity lowered
// (DeleteInstances), and for blue/green makes a second scale set from the
// first's model. It talks to Azure Resource Manager with the Azure SDK
// for Go (armcompute/v7, API 2025-04-01) and the DefaultAzureCredential
// chain. The scale sets of an AKS agent pool are AKS's (provider aks).
package vmss

import (
	"context"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/internal/azarm"
)

// Name is what --provider takes for self-managed scale sets.
const Name = "vmss"

// Environment variables that point the provider at another Resource
// Manager endpoint (the local fake of sim/azurefake): EndpointEnv is its
// base URL, and NoAuthEnv set to "true" with it sends a fixed token over
// plain HTTP instead of asking Microsoft Entra ID for one.
const (
	EndpointEnv = "NODEUPGRADE_VMSS_ENDPOINT"
	NoAuthEnv   = "NODEUPGRADE_VMSS_NO_AUTH"
)

// Error is the provider's error (azarm's, which aks shares).
type Error = azarm.Error

var inputErrorf = azarm.Inputf

// armEndpoint is where the provider sends its requests; a 409 (the scale
// set busy with another operation) passes with time, as throttling and
// server errors do.
var armEndpoint = azarm.Endpoint{Env: EndpointEnv, NoAuthEnv: NoAuthEnv, BusyPasses: true}

// wrap says what could not be done ("cannot ..."), with ARM's code; a
// network failure is a cloud.UnreachableError.
func wrap(err error, format string, args ...any) error { return armEndpoint.Wrap(err, format, args...) }

// status is the HTTP status of an ARM answer behind err, 0 for none.
var status = azarm.Status

// clients are the scale set and scale set VM clients of a subscription,
// and the pipeline they send with (the permissions list's).
type clients struct {
	sets     *armcompute.VirtualMachineScaleSetsClient
	vms      *armcompute.VirtualMachineScaleSetVMsClient
	usages   *armcompute.UsageClient
	skus     *armcompute.ResourceSKUsClient
	pipeline azarm.Pipeline
	// pollEvery is how often a wait on an operation looks again.
	pollEvery time.Duration
}

// newClients connects with DefaultAzureCredential, or to the endpoint the
// environment names with a fixed token.
func newClients(subscription string) (*clients, error) {
	opts, cred, pl, err := armEndpoint.Connect("nodeupgrade.vmss")
	if err != nil {
		return nil, err
	}
	f, err := armcompute.NewClientFactory(subscription, cred, opts)
	if err != nil {
		return nil, inputErrorf("cannot make an Azure Compute client: %v", err)
	}
	return &clients{sets: f.NewVirtualMachineScaleSetsClient(), vms: f.NewVirtualMachineScaleSetVMsClient(),
		usages: f.NewUsageClient(), skus: f.NewResourceSKUsClient(), pipeline: pl,
		pollEvery: 200 * time.Millisecond}, nil
}

// wait polls an operation to its end at the client's pace; a poll that
// fails with what passes (throttling, a server error) is tried again
// until ctx ends, since the operation goes on regardless.
func wait[T any](ctx context.Context, c *clients, p *runtime.Poller[T], what string) error {
	failures := 0
	for !p.Done() {
		if _, err := p.Poll(ctx); err != nil {
			err = wrap(err, "wait for %s", what)
			if !cloud.Transient(err) {
				return err
			}
			failures++
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(cloud.Backoff(c.pollEvery, failures)):
		}
	}
	if _, err := p.Result(ctx); err != nil {
		return wrap(err, "%s", what)
	}
	return nil
}

// resourceID is what a node's azure:// provider ID names: a scale set
// instance.
type resourceID struct {
	subscription, group, scaleSet, instance string
}

// parseProviderID reads a node's azure:// provider ID (azarm.ParseInstanceID).
func parseProviderID(id string) (resourceID, bool) {
	p, ok := azarm.ParseInstanceID(id)
	return resourceID{subscription: p.Subscription, group: p.Group, scaleSet: p.ScaleSet, instance: p.Instance}, ok
}

// str is *p, "" for nil.
var str = azarm.Deref[string]
