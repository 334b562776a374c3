package aws

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
)

// An AWS error that outlasts the SDK's retries is transient when AWS
// throttled the call, so a wait backs off instead of ending the run.
func TestThrottlingIsTransient(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		answer    reply
		transient bool
	}{
		{name: "Throttling (Auto Scaling)", answer: asgError("Throttling", "Rate exceeded"), transient: true},
		{name: "RequestLimitExceeded (EC2's word)", answer: asgError("RequestLimitExceeded", "Request limit exceeded."), transient: true},
		{name: "AccessDenied", answer: asgError("AccessDenied", "not authorized")},
		{name: "ValidationError", answer: asgError("ValidationError", "bad")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := baseReplies()
			r["DescribeAutoScalingGroups"] = func(url.Values) reply { return tc.answer }
			p, f := newTestProvider(t, r, Options{})
			_, err := p.Group(context.Background(), "ng1")
			if err == nil {
				t.Fatal("no error")
			}
			if got := cloud.Transient(err); got != tc.transient {
				t.Errorf("Transient(%v) = %v, want %v", err, got, tc.transient)
			}
			// The SDK retried what it retries before the error came back.
			if n, want := len(f.actions()), map[bool]int{true: cloudAttempts, false: 1}[tc.transient]; n != want {
				t.Errorf("%d calls, want %d", n, want)
			}
		})
	}
}

// Throttling that outlasts the retries of many calls (a wait polling a
// throttled account) never leaves a later call without its retries: the
// clients share one retryer, and it has no retry quota to drain.
func TestRetriesOutlastLongThrottling(t *testing.T) {
	t.Parallel()
	p, _ := newTestProvider(t, baseReplies(), Options{})
	r := p.asg.Options().Retryer
	for name, other := range map[string]sdkaws.Retryer{"ec2": p.ec2.Options().Retryer, "elbv2": p.elbv2.Options().Retryer, "elb": p.elb.Options().Retryer} {
		if other != r {
			t.Errorf("the %s client has a retryer of its own", name)
		}
	}
	throttle := &smithy.GenericAPIError{Code: "Throttling", Message: "Rate exceeded"}
	// The SDK's default quota of 500 tokens, 5 a retry, refuses the 101st.
	for i := range 1000 {
		if _, err := r.GetRetryToken(context.Background(), throttle); err != nil {
			t.Fatalf("retry %d refused: %v", i+1, err)
		}
	}
}

// TestCallsSurviveFaults: every call that changes the group, met once by
// throttling, a 5xx, or a connection closed after AWS carried it out, is
// retried by the shared retryer and done once: the launch template version
// is created with one idempotency token, so AWS makes one.
func TestCallsSurviveFaults(t *testing.T) {
	t.Parallel()
	faults := map[string]reply{
		"throttled":                      asgError("Throttling", "Rate exceeded"),
		"503":                            {503, `<ErrorResponse ` + asgNS + `><Error><Type>Receiver</Type><Code>ServiceUnavailable</Code><Message>unavailable</Message></Error></ErrorResponse>`},
		"500":                            {500, `<ErrorResponse ` + asgNS + `><Error><Type>Receiver</Type><Code>InternalFailure</Code><Message>internal</Message></Error></ErrorResponse>`},
		"connection lost after the call": {status: hangUp},
	}
	calls := []struct {
		name, action string
		call         func(p *Client) error
	}{
		{"set the size", "UpdateAutoScalingGroup", func(p *Client) error { return p.SetSize(context.Background(), "ng1", 4, 5) }},
		{"terminate an instance", "TerminateInstanceInAutoScalingGroup", func(p *Client) error {
			return p.TerminateShrink(context.Background(), "i-1")
		}},
		{"make the target version", "CreateLaunchTemplateVersion", func(p *Client) error {
			g, err := p.Group(context.Background(), "ng1")
			if err != nil {
				return err
			}
			v, err := p.SetTarget(context.Background(), g, "ami-next", "")
			if err == nil && v != "3" {
				err = fmt.Errorf("target version %q, want 3", v)
			}
			return err
		}},
	}
	for _, c := range calls {
		for name, fault := range faults {
			t.Run(c.name+", "+name, func(t *testing.T) {
				t.Parallel()
				r := baseReplies()
				var once sync.Once
				answer := r[c.action]
				r[c.action] = func(v url.Values) reply {
					first := false
					once.Do(func() { first = true })
					if first && name == "throttled" && c.action == "CreateLaunchTemplateVersion" {
						return ec2Error("RequestLimitExceeded", "Request limit exceeded.")
					}
					if first {
						return fault // for hangUp: carried out, its answer lost
					}
					return answer(v)
				}
				p, f := newTestProvider(t, r, Options{})
				if err := c.call(p); err != nil {
					t.Fatalf("call met by %s once: %v", name, err)
				}
				var tokens []string
				for _, v := range f.callsOf(c.action) {
					tokens = append(tokens, v.Get("ClientToken"))
				}
				if len(tokens) != 2 {
					t.Fatalf("%s sent %d times, want twice (%v)", c.action, len(tokens), f.actions())
				}
				// AWS makes one version per token
				if c.action == "CreateLaunchTemplateVersion" && (tokens[0] == "" || tokens[0] != tokens[1]) {
					t.Errorf("tokens %q: want both attempts sent with one", tokens)
				}
			})
		}
	}
}

// TestLostCreateIsSettledByReading: where every attempt of the create
// lost its answer after AWS made the version, the version is found by
// reading the template's versions, and the group pointed at it: not made
// again by a run that stops and starts over.
func TestLostCreateIsSettledByReading(t *testing.T) {
	t.Parallel()
	r := baseReplies()
	created := false
	r["CreateLaunchTemplateVersion"] = func(url.Values) reply { created = true; return reply{status: hangUp} }
	r["DescribeLaunchTemplateVersions"] = func(v url.Values) reply {
		if created && v.Get("MinVersion") != "" {
			return reply{200, `<DescribeLaunchTemplateVersionsResponse ` + ec2NS + `><launchTemplateVersionSet><item>
<launchTemplateId>lt-1</launchTemplateId><versionNumber>2</versionNumber><launchTemplateData><imageId>ami-new</imageId></launchTemplateData>
</item><item>
<launchTemplateId>lt-1</launchTemplateId><versionNumber>3</versionNumber><launchTemplateData><imageId>ami-next</imageId></launchTemplateData>
</item></launchTemplateVersionSet></DescribeLaunchTemplateVersionsResponse>`}
		}
		return reply{200, ltv2XML}
	}
	p, f := newTestProvider(t, r, Options{})
	g, err := p.Group(context.Background(), "ng1")
	if err != nil {
		t.Fatal(err)
	}
	v, err := p.SetTarget(context.Background(), g, "ami-next", "")
	if err != nil || v != "3" {
		t.Fatalf("target %q, %v; want version 3, found", v, err)
	}
	if n := strings.Count(strings.Join(f.actions(), " "), "CreateLaunchTemplateVersion"); n != cloudAttempts {
		t.Errorf("%d creates, want the retryer's %d", n, cloudAttempts)
	}
	if got := f.last("UpdateAutoScalingGroup").Get("LaunchTemplate.Version"); got != "3" {
		t.Errorf("group pointed at version %q, want 3", got)
	}
}
