package aws

import (
	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
)

// throttled reports whether an AWS error code says the call was throttled
// or timed out: the codes the SDK's own retryer retries, so an error with
// one of them outlasted its retries and may pass later.
func throttled(code string) bool {
	_, throttle := retry.DefaultThrottleErrorCodes[code]
	_, timeout := retry.DefaultRetryableErrorCodes[code]
	return throttle || timeout
}

// newRetryer is the one retryer every client of a provider shares: the
// SDK's standard one without its retry quota. By default each client has
// a bucket of 500 tokens that every call failing after its retries
// drains by 10, and once it is empty a call fails at its first throttle:
// in a run of hours against a busy account, the waits' throttled looks
// (which back off on their own, see cloud.Transient) would empty it, and
// then the next call that changes the group would end the run.
func newRetryer() sdkaws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.RateLimiter = ratelimit.None
	})
}
