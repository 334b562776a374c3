// Package gke is the provider of GKE node pools, whose upgrades GKE runs
// itself: the run sets the pool's upgradeSettings and nodeDrainConfig for
// its span, starts nodePools.update once (with the etag read at plan
// time), follows the operation naming the pods and PDBs that hold a node,
// offers GKE's controls (operations.cancel, the update again,
// nodePools.rollback, completeUpgrade) and puts the settings back. It
// never changes the pool's instance groups behind GKE's back. It talks to
// google.golang.org/api/container/v1 with Application Default
// Credentials.
package gke

import (
	"context"
	"errors"
	"os"
	"time"

	compute "google.golang.org/api/compute/v1"
	container "google.golang.org/api/container/v1"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/gce"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/internal/gcpclient"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/internal/gcperr"
)

// Name is what --provider takes for GKE node pools.
const Name = "gke"

// Environment variables that point the provider at another endpoint (the
// local fake of sim/gkefake), as gce's do for Compute Engine: EndpointEnv
// is the container API's base URL, and NoAuthEnv set to "true" with it
// sends no credentials.
const (
	EndpointEnv = "NODEUPGRADE_GKE_ENDPOINT"
	NoAuthEnv   = "NODEUPGRADE_GKE_NO_AUTH"
)

// Error is the provider's error (see gcperr).
type Error = gcperr.Error

func inputErrorf(format string, args ...any) error { return gcperr.Inputf(format, args...) }

// wrap prefixes a client error with what could not be done ("cannot ..."),
// keeping the API's code and message.
func wrap(err error, format string, args ...any) error {
	return gcperr.Wrap(err, true, format, args...)
}

func oneLine(s string) string { return gcperr.OneLine(s) }

// apiCode is the HTTP code of the API's answer, 0 for another error.
func apiCode(err error) int {
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		return ge.Code
	}
	return 0
}

// apiMessage is the API's message of its answer.
func apiMessage(err error) string {
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		return oneLine(ge.Message)
	}
	return oneLine(err.Error())
}

// clients are the container and Compute Engine clients of a project.
type clients struct {
	gke     *container.Service
	compute *compute.Service
	// probeOpts are the options of the Resource Manager client that asks
	// for the caller's permissions.
	probeOpts []option.ClientOption
	// endpoint is EndpointEnv's, "" for Google's.
	endpoint string
	// pollEvery is how often a wait on an operation asks again.
	pollEvery time.Duration
}

// newClients connects to GKE and Compute Engine with Application Default
// Credentials, or to the endpoints the environment names.
func newClients(ctx context.Context) (*clients, error) {
	opts, err := gce.ClientOptions(ctx, EndpointEnv, NoAuthEnv, container.CloudPlatformScope)
	if err != nil {
		return nil, err
	}
	ropts, err := gcpclient.WithRetries(ctx, gcpclient.Container, opts)
	if err != nil {
		return nil, err
	}
	g, err := container.NewService(ctx, ropts...)
	if err != nil {
		return nil, wrap(err, "make a GKE client")
	}
	copts, err := gce.ClientOptions(ctx, gce.EndpointEnv, gce.NoAuthEnv, compute.ComputeScope)
	if err != nil {
		return nil, err
	}
	if copts, err = gcpclient.WithRetries(ctx, gcpclient.Compute, copts); err != nil {
		return nil, err
	}
	c, err := compute.NewService(ctx, copts...)
	if err != nil {
		return nil, wrap(err, "make a Compute Engine client")
	}
	probe, err := gcpclient.WithRetries(ctx, gcpclient.ResourceManager, opts)
	if err != nil {
		return nil, err
	}
	return &clients{gke: g, compute: c, probeOpts: probe, endpoint: os.Getenv(EndpointEnv), pollEvery: time.Second}, nil
}
