package aws

import (
	"context"
	"net/url"
	"testing"

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
