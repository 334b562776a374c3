// Package aks is the provider of AKS agent pools, whose upgrades AKS runs
// itself: the run sets the pool's upgradeSettings (maxSurge,
// drainTimeoutInMinutes, nodeSoakDurationInMinutes) for its span, starts
// AKS's upgrade once (a PUT of the pool with its orchestratorVersion for a
// Kubernetes version, agentPools/upgradeNodeImageVersion for the node
// image), follows it naming the pods and PDBs that hold a node, offers
// AKS's controls (cancel: agentPools/abort; resume: the same request
// again, which is how AKS finishes a Failed or Canceled pool) and puts
// the settings back. It never changes the pool's scale set behind AKS's
// back (AKS undoes it). It talks to Azure Resource Manager with the
// Azure SDK for Go (armcontainerservice/v6, API 2025-02-01) and the
// DefaultAzureCredential chain.
package aks

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
	armcs "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
)

// Name is what --provider takes for AKS agent pools.
const Name = "aks"

// Environment variables that point the provider at another Resource
// Manager endpoint (the local fake of sim/azurefake): EndpointEnv is its
// base URL, and NoAuthEnv set to "true" with it sends a fixed token over
// plain HTTP instead of asking Microsoft Entra ID for one.
const (
	EndpointEnv = "NODEUPGRADE_AKS_ENDPOINT"
	NoAuthEnv   = "NODEUPGRADE_AKS_NO_AUTH"
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

// wrap says what could not be done ("cannot ..."), with ARM's code and
// message; a network failure is a cloud.UnreachableError.
func wrap(err error, format string, args ...any) error {
	what := fmt.Sprintf(format, args...)
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		e := &Error{Msg: fmt.Sprintf("cannot %s: %s (HTTP %d): %s", what, re.ErrorCode, re.StatusCode, armMessage(re)), Err: err,
			IsTransient: re.StatusCode == http.StatusTooManyRequests || re.StatusCode >= 500}
		e.IsInput = re.StatusCode == http.StatusForbidden || re.StatusCode == http.StatusUnauthorized
		return e
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("cannot %s: %w", what, err)
	}
	return &cloud.UnreachableError{Cloud: "Azure", Endpoint: endpoint(), Settings: EndpointEnv + ", the Azure credential chain", Err: fmt.Errorf("cannot %s: %w", what, err)}
}

// armMessage is ARM's error.message of a response, on one line.
func armMessage(re *azcore.ResponseError) string {
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

// refusal is ARM's answer in err as "code: message", or err's first line
// where it is no ARM answer.
func refusal(err error) string {
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		s, _, _ := strings.Cut(err.Error(), "\n")
		return s
	}
	c, _ := code(err)
	return c + ": " + armMessage(re)
}

// code is ARM's error code of err and its HTTP status; "" and 0 for an
// error that is no ARM answer.
func code(err error) (string, int) {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.ErrorCode, re.StatusCode
	}
	return "", 0
}

// endpoint is the Resource Manager endpoint the provider calls.
func endpoint() string {
	if e := os.Getenv(EndpointEnv); e != "" {
		return e
	}
	return azcloud.AzurePublic.Services[azcloud.ResourceManager].Endpoint
}

// clients are the agent pool and managed cluster clients of a
// subscription, and the pipeline they send with.
type clients struct {
	pools    *armcs.AgentPoolsClient
	clusters *armcs.ManagedClustersClient
	pipeline interface {
		Do(*policy.Request) (*http.Response, error)
	}
	// pollEvery is how often a wait on the pool looks again.
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
	opts.PerRetryPolicies = append(opts.PerRetryPolicies, opCapture{})
	// Few retries, quickly: the run's own waits look again.
	opts.Retry = policy.RetryOptions{MaxRetries: 4, RetryDelay: 200 * time.Millisecond, MaxRetryDelay: 5 * time.Second}
	f, err := armcs.NewClientFactory(subscription, cred, opts)
	if err != nil {
		return nil, inputErrorf("cannot make an AKS client: %v", err)
	}
	pl, err := arm.NewClient("nodeupgrade.aks", "v0.1.0", cred, opts)
	if err != nil {
		return nil, inputErrorf("cannot make an ARM client: %v", err)
	}
	return &clients{pools: f.NewAgentPoolsClient(), clusters: f.NewManagedClustersClient(), pipeline: pl.Pipeline(), pollEvery: time.Second}, nil
}

// staticToken is the credential of a local endpoint: a fixed token.
type staticToken struct{}

func (staticToken) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{Token: "nodeupgrade-local", ExpiresOn: time.Now().Add(time.Hour)}, nil
}
