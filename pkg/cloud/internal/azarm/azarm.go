// Package azarm is what the Azure providers (aks, vmss) share of Azure
// Resource Manager: their error, ARM's answers read into it, and the
// client options of an endpoint (Azure's, with the DefaultAzureCredential
// chain, or a local one with a fixed token).
package azarm

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
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
)

// Error is the providers' error (cloud.Error).
type Error = cloud.Error

// Inputf is an error the user fixes.
var Inputf = cloud.Inputf

// Endpoint is where a provider sends its requests: Env names another
// Resource Manager endpoint (the local fake of sim/azurefake), and
// NoAuthEnv set to "true" with it sends a fixed token over plain HTTP
// instead of asking Microsoft Entra ID for one.
type Endpoint struct {
	Env, NoAuthEnv string
	// BusyPasses makes a 409 (the resource busy with another operation)
	// transient, where the provider waits it out.
	BusyPasses bool
}

// URL is the Resource Manager endpoint the provider calls.
func (e Endpoint) URL() string {
	if u := os.Getenv(e.Env); u != "" {
		return u
	}
	return azcloud.AzurePublic.Services[azcloud.ResourceManager].Endpoint
}

// Options are the client options and credential of the endpoint:
// DefaultAzureCredential, or the fixed token of a local one; few
// retries, quickly, since the run's own waits look again.
func (e Endpoint) Options() (*arm.ClientOptions, azcore.TokenCredential, error) {
	opts := &arm.ClientOptions{}
	if u := os.Getenv(e.Env); u != "" {
		opts.Cloud = azcloud.Configuration{Services: map[azcloud.ServiceName]azcloud.ServiceConfiguration{
			azcloud.ResourceManager: {Endpoint: u, Audience: "https://management.core.windows.net/"}}}
	}
	opts.Retry = policy.RetryOptions{MaxRetries: 4, RetryDelay: 200 * time.Millisecond, MaxRetryDelay: MaxRetryAfter}
	if os.Getenv(e.NoAuthEnv) == "true" {
		opts.InsecureAllowCredentialWithHTTP, opts.DisableRPRegistration = true, true
		return opts, staticToken{}, nil
	}
	cred, err := azidentity.NewDefaultAzureCredential(nil)
	if err != nil {
		return nil, nil, Inputf("cannot find Azure credentials: %v; sign in with \"az login\" or set AZURE_CLIENT_ID and its secret", err)
	}
	return opts, cred, nil
}

// MaxRetryAfter is the longest Retry-After the requests wait out. ARM
// throttles with a 429 whose Retry-After is in seconds, often tens of
// them
// (https://learn.microsoft.com/en-us/azure/azure-resource-manager/management/request-limits-and-throttling#error-code);
// azcore's retry policy does not retry at all an answer whose Retry-After
// exceeds RetryOptions.MaxRetryDelay (policy_retry.go: "the retry-after
// delay exceeds the cap so don't retry"), so the cap is the SDK's
// default, not a short one: a low cap ended a run on one 429.
const MaxRetryAfter = 60 * time.Second

// staticToken is the credential of a local endpoint: a fixed token.
type staticToken struct{}

func (staticToken) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{Token: "nodeupgrade-local", ExpiresOn: time.Now().Add(time.Hour)}, nil
}

// Wrap says what could not be done ("cannot ..."), with ARM's code and
// message; a network failure is a cloud.UnreachableError.
func (e Endpoint) Wrap(err error, format string, args ...any) error {
	what := fmt.Sprintf(format, args...)
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		s := re.StatusCode
		if QuotaExceeded(err) { // no wait frees quota: the run stops, naming it
			return &Error{Msg: fmt.Sprintf("cannot %s: %s (HTTP %d): %s; free vCPUs or ask for more quota (plan and check read it), or lower --max-surge", what, re.ErrorCode, s, Message(re)), Err: err}
		}
		if capacityCodes[re.ErrorCode] { // a 409 too, but no wait for the resource passes it
			return &Error{Msg: fmt.Sprintf("cannot %s: %s (HTTP %d): %s", what, re.ErrorCode, s, Message(re)), Err: err}
		}
		return &Error{Msg: fmt.Sprintf("cannot %s: %s (HTTP %d): %s", what, re.ErrorCode, s, Message(re)), Err: err,
			IsTransient: s == http.StatusTooManyRequests || s >= 500 || e.BusyPasses && s == http.StatusConflict,
			IsInput:     s == http.StatusForbidden || s == http.StatusUnauthorized}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("cannot %s: %w", what, err)
	}
	return &cloud.UnreachableError{Cloud: "Azure", Endpoint: e.URL(), Settings: e.Env + ", the Azure credential chain", Err: fmt.Errorf("cannot %s: %w", what, err)}
}

// QuotaExceeded reports whether err is Azure refusing a request for a
// quota it would exceed: "Code=OperationNotAllowed Message=Operation
// results in exceeding quota limits of Core. Maximum allowed: 4, Current
// in use: 4, Additional requested: 2."
// (https://learn.microsoft.com/en-us/azure/azure-resource-manager/troubleshooting/error-resource-quota),
// a 409 like the busy resource's OperationNotAllowed but no wait passes it;
// AKS's own code for it is QuotaExceeded.
func QuotaExceeded(err error) bool {
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		return false
	}
	return quotaCode(re.ErrorCode, Message(re))
}

// quotaCode reports whether code and message refuse for a quota.
func quotaCode(code, message string) bool {
	return code == "QuotaExceeded" || code == "OperationNotAllowed" && strings.Contains(strings.ToLower(message), "quota")
}

// capacityCodes are Azure's refusals of new machines for want of
// capacity, which no wait for the resource passes: SkuNotAvailable ("The
// requested size for resource ... is currently not available in location
// ... zones ...", https://learn.microsoft.com/en-us/azure/azure-resource-manager/troubleshooting/error-sku-not-available),
// the allocation failures of a region or zone without the capacity
// (AllocationFailed, ZonalAllocationFailed, OverconstrainedAllocationRequest,
// OverconstrainedZonalAllocationRequest:
// https://learn.microsoft.com/en-us/troubleshoot/azure/virtual-machines/windows/allocation-failure)
// and AKS's subnet without the addresses of the new nodes
// (InsufficientSubnetSize:
// https://learn.microsoft.com/en-us/troubleshoot/azure/azure-kubernetes/create-upgrade-delete/error-code-insufficientsubnetsize).
var capacityCodes = map[string]bool{"SkuNotAvailable": true, "AllocationFailed": true, "ZonalAllocationFailed": true,
	"OverconstrainedAllocationRequest": true, "OverconstrainedZonalAllocationRequest": true, "InsufficientSubnetSize": true}

// LaunchRefused reports whether code and message are Azure refusing new
// machines for their quota or capacity (capacityCodes, and the quota's
// QuotaExceeded or OperationNotAllowed naming a quota, as QuotaExceeded).
func LaunchRefused(code, message string) bool {
	return capacityCodes[code] || quotaCode(code, message)
}

// LaunchRefusal is ARM's code and message of err where it refuses new
// machines (LaunchRefused); ok false for any other error.
func LaunchRefusal(err error) (code, message string, ok bool) {
	var re *azcore.ResponseError
	if !errors.As(err, &re) || !LaunchRefused(re.ErrorCode, Message(re)) {
		return "", "", false
	}
	return re.ErrorCode, Message(re), true
}

// NodeCreationFailure is a refusal of new machines (LaunchRefused) as the
// run's cloud.CodeNodeCreation: the run stops with exit 7 naming Azure's
// code and words; what says what was refused, done what was left as it
// was.
func NodeCreationFailure(code, message, what, done string) error {
	msg := fmt.Sprintf("%s: Azure refused the new machines: %s: %s; %s", what, code, message, done)
	return &Error{Msg: cloud.CodeNodeCreation + ": " + msg, Err: cloud.UpdateError{Code: cloud.CodeNodeCreation, Message: msg}}
}

// Message is ARM's error.message of a response, on one line.
func Message(re *azcore.ResponseError) string {
	msg := re.Error()
	if i := strings.Index(msg, "\"message\": \""); i >= 0 {
		msg = msg[i+len("\"message\": \""):]
		if j := strings.Index(msg, "\""); j >= 0 {
			msg = msg[:j]
		}
		return msg
	}
	return strings.Join(strings.Fields(msg), " ")
}

// Code is ARM's error code of err and its HTTP status; "" and 0 for an
// error that is no ARM answer.
func Code(err error) (string, int) {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.ErrorCode, re.StatusCode
	}
	return "", 0
}

// Connect is Options with the pipeline of an ARM client named module
// (what the raw and permissions requests send through), perRetry added
// to the options' per-retry policies; the credential and options make
// the provider's SDK clients.
func (e Endpoint) Connect(module string, perRetry ...policy.Policy) (*arm.ClientOptions, azcore.TokenCredential, Pipeline, error) {
	opts, cred, err := e.Options()
	if err != nil {
		return nil, nil, nil, err
	}
	opts.PerRetryPolicies = append(opts.PerRetryPolicies, perRetry...)
	cl, err := arm.NewClient(module, "v0.1.0", cred, opts)
	if err != nil {
		return nil, nil, nil, Inputf("cannot make an ARM client: %v", err)
	}
	return opts, cred, cl.Pipeline(), nil
}

// Status is the HTTP status of an ARM answer behind err, 0 for none.
func Status(err error) int {
	_, s := Code(err)
	return s
}

// Deref is *p, T's zero value for nil.
func Deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// InstanceID is what a node's azure:// provider ID names: a scale set
// instance (an AKS node's too: its pool is a scale set in the node
// resource group).
type InstanceID struct {
	Subscription, Group, ScaleSet, Instance string
}

// ParseInstanceID reads
// azure:///subscriptions/S/resourceGroups/G/providers/Microsoft.Compute/virtualMachineScaleSets/V/virtualMachines/I,
// as the Azure cloud provider sets it (kubernetes-sigs/cloud-provider-azure:
// the instance's resource ID behind "azure://"); ARM IDs are
// case-insensitive.
func ParseInstanceID(id string) (InstanceID, bool) {
	rest, ok := strings.CutPrefix(id, "azure:///")
	if !ok {
		return InstanceID{}, false
	}
	p := strings.Split(rest, "/")
	if len(p) != 10 || !strings.EqualFold(p[0], "subscriptions") || !strings.EqualFold(p[2], "resourceGroups") ||
		!strings.EqualFold(p[5], "Microsoft.Compute") || !strings.EqualFold(p[6], "virtualMachineScaleSets") || !strings.EqualFold(p[8], "virtualMachines") {
		return InstanceID{}, false
	}
	for _, s := range p {
		if s == "" {
			return InstanceID{}, false
		}
	}
	return InstanceID{Subscription: p[1], Group: p[3], ScaleSet: p[7], Instance: p[9]}, true
}
