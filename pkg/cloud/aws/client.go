// Package aws is the provider "aws": node groups backed by EC2 Auto Scaling
// groups (the run points the group at the target launch template version,
// resizes it and terminates replaced instances: asg.go, target.go,
// sizes.go) and EKS managed node groups, whose updates EKS runs (eks*.go,
// managed*.go), through the AWS SDK for Go v2. Client is the API client;
// NodeGroup and ManagedNodeGroup are the groups a run works with.
package aws

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	"github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
)

// Options select the account, region and group.
type Options struct {
	Region, Profile string
	// ASGName names the Auto Scaling group; empty means find it from the
	// nodes' instance IDs.
	ASGName string
	// Exclude are groups whose instances FindGroup ignores (a blue/green
	// run's given green group, whose nodes carry the same labels).
	Exclude []string
	// FallbackRegion is used when neither Region nor the SDK's
	// configuration names one (the region of the nodes' zones).
	FallbackRegion string
}

// Client talks to Auto Scaling and EC2.
type Client struct {
	opts   Options
	region string
	asg    *autoscaling.Client
	ec2    *ec2.Client
	elbv2  *elasticloadbalancingv2.Client
	elb    *elasticloadbalancing.Client
	// pollEvery is how often a wait asks again (lb.go).
	pollEvery time.Duration
	// cfg is what the clients were made from, for the EKS calls (eksapi.go).
	cfg sdkaws.Config
}

// Error is an error whose message is short enough for one line of CLI
// output; the SDK's error, with its request ID, stays reachable through
// errors.Unwrap / errors.As.
type Error struct {
	msg       string
	err       error
	input     bool
	transient bool
}

func (e *Error) Error() string { return e.msg }

// Transient reports whether AWS throttled the call, answered 5xx, or could
// not be reached, after the SDK's retries (see cloud.Transient).
func (e *Error) Transient() bool { return e.transient }

// Input reports whether the error is the user's to fix (a flag, the
// credentials): the command exits 2, and nothing was changed.
func (e *Error) Input() bool { return e.input }

// errVersionNotFound is behind the error of a launch template version
// that does not exist.
var errVersionNotFound = errors.New("launch template version not found")

func isNotFound(err error) bool { return errors.Is(err, errVersionNotFound) }

func inputErrorf(format string, args ...any) error {
	return &Error{msg: fmt.Sprintf(format, args...), input: true}
}

func (e *Error) Unwrap() error { return e.err }

func (p *Client) groupNotFound(name string) error {
	return &Error{msg: fmt.Sprintf("auto scaling group %q not found in region %q; check --asg and --region", name, p.region), err: cloud.ErrGroupNotFound, input: true}
}

// wrap prefixes an SDK error with what could not be done ("cannot
// describe ..."), keeping only the service's error code and message.
func wrap(err error, format string, args ...any) error {
	msg := "cannot " + fmt.Sprintf(format, args...)
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return &Error{msg: fmt.Sprintf("%s: %s: %s", msg, ae.ErrorCode(), oneLine(ae.ErrorMessage())), err: err, transient: transient(err, ae.ErrorCode())}
	}
	return &Error{msg: msg + ": " + oneLine(err.Error()), err: err, transient: transient(err, "")}
}

func oneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimRight(s, ".")
}

// New loads the SDK's default configuration (environment, shared config and
// SSO profiles, web identity, instance roles; AWS_ENDPOINT_URL and the
// per-service AWS_ENDPOINT_URL_AUTO_SCALING / AWS_ENDPOINT_URL_EC2 are
// honoured by the SDK itself) and checks that a region and credentials are
// there, so a missing one fails here with a clear message rather than on the
// first call.
func New(ctx context.Context, opts Options) (*Client, error) {
	// The SDK's own log lines (retries, connection reuse) would break the
	// one-line errors and the progress output; its errors say enough.
	lo := []func(*config.LoadOptions) error{config.WithLogger(logging.Nop{})}
	if opts.Region != "" {
		lo = append(lo, config.WithRegion(opts.Region))
	}
	if opts.Profile != "" {
		lo = append(lo, config.WithSharedConfigProfile(opts.Profile))
	}
	cfg, err := config.LoadDefaultConfig(ctx, lo...)
	if err != nil {
		if opts.Profile != "" {
			return nil, &Error{msg: fmt.Sprintf("load AWS profile %q: %s; check --profile", opts.Profile, oneLine(err.Error())), err: err, input: true}
		}
		return nil, wrap(err, "load AWS configuration")
	}
	if cfg.Region == "" {
		cfg.Region = opts.FallbackRegion
	}
	if cfg.Region == "" {
		return nil, inputErrorf("no AWS region configured; use --region or set AWS_REGION")
	}
	if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
		return nil, &Error{msg: "no AWS credentials found; set AWS_PROFILE (or use --profile) or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or run aws sso login", err: err, input: true}
	}
	return NewFromConfig(cfg, opts), nil
}

// NewFromConfig makes a provider from an SDK configuration the caller has
// loaded.
func NewFromConfig(cfg sdkaws.Config, opts Options) *Client {
	if cfg.Retryer == nil { // unless AWS_RETRY_MODE or the caller chose one
		shared := newRetryer()
		cfg.Retryer = func() sdkaws.Retryer { return shared }
	}
	cfg.APIOptions = append(slices.Clip(cfg.APIOptions), markUnreachable)
	return &Client{
		opts:   opts,
		region: cfg.Region,
		asg:    autoscaling.NewFromConfig(cfg),
		ec2:    ec2.NewFromConfig(cfg),
		elbv2:  elasticloadbalancingv2.NewFromConfig(cfg),
		elb:    elasticloadbalancing.NewFromConfig(cfg),

		pollEvery: deregistrationPoll,
		cfg:       cfg,
	}
}

// Region is the region the provider works in.
func (p *Client) Region() string { return p.region }

// InstanceIDFromProviderID splits a node's spec.providerID,
// aws:///us-east-1a/i-0abc, into zone and instance ID.
func InstanceIDFromProviderID(providerID string) (zone, id string, ok bool) {
	rest, found := strings.CutPrefix(providerID, "aws://")
	if !found {
		return "", "", false
	}
	parts := strings.Split(strings.TrimPrefix(rest, "/"), "/")
	id = parts[len(parts)-1]
	if !strings.HasPrefix(id, "i-") || len(id) < 3 {
		return "", "", false
	}
	if len(parts) >= 2 {
		zone = parts[len(parts)-2]
	}
	return zone, id, true
}

// RegionFromZone turns an availability zone (us-east-1a) into its region
// (us-east-1), or returns "" when it does not look like one.
func RegionFromZone(zone string) string {
	n := len(zone)
	if n < 3 || zone[n-1] < 'a' || zone[n-1] > 'z' || zone[n-2] < '0' || zone[n-2] > '9' {
		return ""
	}
	return zone[:n-1]
}
