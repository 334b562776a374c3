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
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	azcloud "github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
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

// Error is the provider's error: Input marks what the user fixes (exit 2,
// nothing changed), Transient what passes with time.
type Error struct {
	Msg                  string
	Err                  error
	IsInput, IsTransient bool
}

func (e *Error) Error() string   { return e.Msg }
func (e *Error) Unwrap() error   { return e.Err }
func (e *Error) Input() bool     { return e.IsInput }
func (e *Error) Transient() bool { return e.IsTransient }

func inputErrorf(format string, args ...any) error {
	return &Error{Msg: fmt.Sprintf(format, args...), IsInput: true}
}

// wrap says what could not be done ("cannot ..."), with ARM's code; a
// 409 (the scale set busy with another operation) passes with time, as
// throttling and server errors do; a network failure is a
// cloud.UnreachableError.
func wrap(err error, format string, args ...any) error {
	what := fmt.Sprintf(format, args...)
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return &Error{Msg: fmt.Sprintf("cannot %s: %s (HTTP %d)", what, re.ErrorCode, re.StatusCode), Err: err,
			IsTransient: re.StatusCode == http.StatusTooManyRequests || re.StatusCode == http.StatusConflict || re.StatusCode >= 500,
			IsInput:     re.StatusCode == http.StatusForbidden || re.StatusCode == http.StatusUnauthorized}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("cannot %s: %w", what, err)
	}
	return &cloud.UnreachableError{Cloud: "Azure", Endpoint: endpoint(), Settings: EndpointEnv + ", the Azure credential chain", Err: fmt.Errorf("cannot %s: %w", what, err)}
}

// status is the HTTP status of an ARM answer behind err, 0 for none.
func status(err error) int {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	return 0
}

// endpoint is the Resource Manager endpoint the provider calls.
func endpoint() string {
	if e := os.Getenv(EndpointEnv); e != "" {
		return e
	}
	return azcloud.AzurePublic.Services[azcloud.ResourceManager].Endpoint
}

// clients are the scale set and scale set VM clients of a subscription.
type clients struct {
	sets *armcompute.VirtualMachineScaleSetsClient
	vms  *armcompute.VirtualMachineScaleSetVMsClient
	// pollEvery is how often a wait on an operation looks again.
	pollEvery time.Duration
}

// newClients connects with DefaultAzureCredential, or to the endpoint the
// environment names with a fixed token.
func newClients(subscription string) (*clients, error) {
	opts := &arm.ClientOptions{}
	var cred azcore.TokenCredential
	if e := os.Getenv(EndpointEnv); e != "" {
		opts.Cloud = azcloud.Configuration{Services: map[azcloud.ServiceName]azcloud.ServiceConfiguration{
			azcloud.ResourceManager: {Endpoint: e, Audience: "https://management.core.windows.net/"}}}
	}
	if os.Getenv(NoAuthEnv) == "true" {
		cred, opts.InsecureAllowCredentialWithHTTP = staticToken{}, true
		opts.DisableRPRegistration = true
	} else {
		c, err := azidentity.NewDefaultAzureCredential(nil)
		if err != nil {
			return nil, inputErrorf("cannot find Azure credentials: %v; sign in with \"az login\" or set AZURE_CLIENT_ID and its secret", err)
		}
		cred = c
	}
	// Few retries, quickly: the run's own waits look again.
	opts.Retry = policy.RetryOptions{MaxRetries: 4, RetryDelay: 200 * time.Millisecond, MaxRetryDelay: 5 * time.Second}
	f, err := armcompute.NewClientFactory(subscription, cred, opts)
	if err != nil {
		return nil, inputErrorf("cannot make an Azure Compute client: %v", err)
	}
	return &clients{sets: f.NewVirtualMachineScaleSetsClient(), vms: f.NewVirtualMachineScaleSetVMsClient(), pollEvery: 200 * time.Millisecond}, nil
}

// staticToken is the credential of a local endpoint: a fixed token.
type staticToken struct{}

func (staticToken) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{Token: "nodeupgrade-local", ExpiresOn: time.Now().Add(time.Hour)}, nil
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

// parseProviderID reads
// azure:///subscriptions/S/resourceGroups/G/providers/Microsoft.Compute/virtualMachineScaleSets/V/virtualMachines/I,
// as the Azure cloud provider sets it (kubernetes-sigs/cloud-provider-azure:
// the instance's resource ID behind "azure://").
func parseProviderID(id string) (resourceID, bool) {
	rest, ok := strings.CutPrefix(id, "azure:///")
	if !ok {
		return resourceID{}, false
	}
	p := strings.Split(rest, "/")
	if len(p) != 10 || !strings.EqualFold(p[0], "subscriptions") || !strings.EqualFold(p[2], "resourceGroups") ||
		!strings.EqualFold(p[5], "Microsoft.Compute") || !strings.EqualFold(p[6], "virtualMachineScaleSets") || !strings.EqualFold(p[8], "virtualMachines") {
		return resourceID{}, false
	}
	for _, s := range p {
		if s == "" {
			return resourceID{}, false
		}
	}
	return resourceID{subscription: p[1], group: p[3], scaleSet: p[7], instance: p[9]}, true
}

// str is *p, "" for nil.
func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
