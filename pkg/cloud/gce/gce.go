// Package gce is the Compute Engine side of the product's update: it finds
// the managed instance groups (MIGs) of a node group from its nodes'
// instances, points them at the target instance template (a copy of the
// group's with only the boot image changed, for --image), changes their
// target size and deletes or recreates drained instances, through
// google.golang.org/api/compute/v1.
package gce

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/auth/credentials"
	compute "google.golang.org/api/compute/v1"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/internal/gcpclient"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/internal/gcperr"
)

// Environment variables that point the provider at another endpoint (the
// local fake of sim/gcefake): EndpointEnv is the API's base URL, and
// NoAuthEnv set to "true" with it sends no credentials.
const (
	EndpointEnv = "NODEUPGRADE_GCE_ENDPOINT"
	NoAuthEnv   = "NODEUPGRADE_GCE_NO_AUTH"
)

// Client talks to Compute Engine in one project.
type Client struct {
	svc     *compute.Service
	project string
	// probeOpts are the Resource Manager client's (see ProbePermissions).
	probeOpts []option.ClientOption
	// pollEvery is how often a wait on an operation asks again.
	pollEvery time.Duration
}

// Error is the provider's error (see gcperr).
type Error = gcperr.Error

func inputErrorf(format string, args ...any) error { return gcperr.Inputf(format, args...) }

// groupNotFoundf is an input error behind which is cloud.ErrGroupNotFound.
func groupNotFoundf(format string, args ...any) error {
	return &Error{Msg: fmt.Sprintf(format, args...), Err: cloud.ErrGroupNotFound, IsInput: true}
}

// wrap prefixes a client error with what could not be done ("cannot get
// ..."), keeping the API's code and message. Another error is not kept
// as the cause, but for the endpoint's failure to answer (see
// gcperr.Wrap): a bare connection error behind it would read as the
// Kubernetes API server's.
func wrap(err error, format string, args ...any) error {
	return gcperr.Wrap(err, false, format, args...)
}

func oneLine(s string) string { return gcperr.OneLine(s) }

// isCode reports whether err is the API's answer with that HTTP code.
func isCode(err error, code int) bool {
	var ge *googleapi.Error
	return errors.As(err, &ge) && ge.Code == code
}

// New connects to Compute Engine for project with Application Default
// Credentials (GOOGLE_APPLICATION_CREDENTIALS, gcloud's ADC file, the
// metadata server), fetching a token once so that missing credentials fail
// here with a clear message rather than on the first call. EndpointEnv
// overrides the endpoint, and with NoAuthEnv no credentials are sent.
func New(ctx context.Context, project string) (*Client, error) {
	opts, err := ClientOptions(ctx, EndpointEnv, NoAuthEnv, compute.ComputeScope)
	if err != nil {
		return nil, err
	}
	ropts, err := gcpclient.WithRetries(ctx, gcpclient.Compute, opts)
	if err != nil {
		return nil, err
	}
	svc, err := compute.NewService(ctx, ropts...)
	if err != nil {
		return nil, wrap(err, "make a Compute Engine client")
	}
	probe, err := gcpclient.WithRetries(ctx, gcpclient.ResourceManager, opts)
	if err != nil {
		return nil, err
	}
	return &Client{svc: svc, project: project, probeOpts: probe, pollEvery: time.Second}, nil
}

// ClientOptions are the options of a Google Cloud API client: the
// endpoint endpointEnv names, if set, and with noAuthEnv "true" beside it
// no credentials; else Application Default Credentials for scope, a token
// fetched once so that missing credentials fail here with a clear
// message rather than on the first call.
func ClientOptions(ctx context.Context, endpointEnv, noAuthEnv, scope string) ([]option.ClientOption, error) {
	var opts []option.ClientOption
	endpoint := os.Getenv(endpointEnv)
	if endpoint != "" {
		opts = append(opts, option.WithEndpoint(endpoint))
	}
	if noAuth, _ := strconv.ParseBool(os.Getenv(noAuthEnv)); noAuth && endpoint != "" {
		return append(opts, option.WithoutAuthentication()), nil
	}
	creds, err := credentials.DetectDefault(&credentials.DetectOptions{Scopes: []string{scope}})
	if err == nil {
		_, err = creds.Token(ctx)
	}
	if err != nil {
		// The cause is in the message only: a connection error to the
		// metadata server would read as the Kubernetes API server's.
		return nil, inputErrorf("no Google Cloud credentials found (%s); run \"gcloud auth application-default login\" or set GOOGLE_APPLICATION_CREDENTIALS to a service account key file", oneLine(err.Error()))
	}
	return append(opts, option.WithAuthCredentials(creds)), nil
}

// Project is the project the provider works in.
func (p *Client) Project() string { return p.project }

// InstanceFromProviderID splits a node's spec.providerID,
// gce://PROJECT/ZONE/NAME, into its parts.
func InstanceFromProviderID(providerID string) (project, zone, name string, ok bool) {
	rest, found := strings.CutPrefix(providerID, "gce://")
	if !found {
		return "", "", "", false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return "", "", "", false
	}
	return parts[0], parts[1], parts[2], true
}

// RegionOf is the region of a zone (us-central1-a: us-central1).
func RegionOf(zone string) string {
	i := strings.LastIndex(zone, "-")
	if i < 0 {
		return zone
	}
	return zone[:i]
}

// lastSegment is the name at the end of a resource URL.
func lastSegment(url string) string {
	return url[strings.LastIndex(url, "/")+1:]
}

// waitGlobal waits until a global operation (a template's insert) is DONE
// and returns its error. Operations of managed instance groups are not
// waited for: they are DONE once the action is scheduled, and the managed
// instances say when it has happened.
func (p *Client) waitGlobal(ctx context.Context, op *compute.Operation) error {
	pause, failures := p.pollEvery, 0
	for op.Status != "DONE" {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		next, err := p.svc.GlobalOperations.Wait(p.project, op.Name).Context(ctx).Do()
		if err != nil {
			// Throttled or briefly unavailable past the client's retries:
			// the operation goes on, so the wait does too.
			err = wrap(err, "wait for operation %q", op.Name)
			if !cloud.Transient(err) {
				return err
			}
			failures++
			pause = cloud.Backoff(p.pollEvery, failures)
			continue
		}
		op, pause, failures = next, p.pollEvery, 0
	}
	if op.Error != nil && len(op.Error.Errors) > 0 {
		e := op.Error.Errors[0]
		return &Error{Msg: fmt.Sprintf("operation %s on %s failed: %s: %s", op.OperationType, lastSegment(op.TargetLink), e.Code, oneLine(e.Message))}
	}
	return nil
}
