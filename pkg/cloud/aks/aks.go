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
	"errors"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	armcs "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/internal/azarm"
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

// Error is the provider's error (azarm's, which vmss shares).
type Error = azarm.Error

var inputErrorf = azarm.Inputf

// armEndpoint is where the provider sends its requests.
var armEndpoint = azarm.Endpoint{Env: EndpointEnv, NoAuthEnv: NoAuthEnv}

// wrap says what could not be done ("cannot ..."), with ARM's code and
// message; a network failure is a cloud.UnreachableError.
func wrap(err error, format string, args ...any) error { return armEndpoint.Wrap(err, format, args...) }

// refusal is ARM's answer in err as "code: message", or err's first line
// where it is no ARM answer.
func refusal(err error) string {
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		s, _, _ := strings.Cut(err.Error(), "\n")
		return s
	}
	return re.ErrorCode + ": " + azarm.Message(re)
}

// code is ARM's error code of err and its HTTP status.
func code(err error) (string, int) { return azarm.Code(err) }

// endpoint is the Resource Manager endpoint the provider calls.
func endpoint() string { return armEndpoint.URL() }

// clients are the agent pool and managed cluster clients of a
// subscription, and the pipeline they send with.
type clients struct {
	pools    *armcs.AgentPoolsClient
	clusters *armcs.ManagedClustersClient
	pipeline azarm.Pipeline
	// pollEvery is how often a wait on the pool looks again.
	pollEvery time.Duration
}

// newClients connects with DefaultAzureCredential, or to the endpoint the
// environment names with a fixed token.
func newClients(subscription string) (*clients, error) {
	opts, cred, pl, err := armEndpoint.Connect("nodeupgrade.aks", opCapture{})
	if err != nil {
		return nil, err
	}
	f, err := armcs.NewClientFactory(subscription, cred, opts)
	if err != nil {
		return nil, inputErrorf("cannot make an AKS client: %v", err)
	}
	return &clients{pools: f.NewAgentPoolsClient(), clusters: f.NewManagedClustersClient(), pipeline: pl, pollEvery: time.Second}, nil
}
