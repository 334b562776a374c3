package aws

import (
	"context"
	"net/url"
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
			if n, want := len(f.actions()), map[bool]int{true: 3, false: 1}[tc.transient]; n != want {
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
