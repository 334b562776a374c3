package aws

import "github.com/aws/aws-sdk-go-v2/aws/retry"

// throttled reports whether an AWS error code says the call was throttled
// or timed out: the codes the SDK's own retryer retries, so an error with
// one of them outlasted its retries and may pass later.
func throttled(code string) bool {
	_, throttle := retry.DefaultThrottleErrorCodes[code]
	_, timeout := retry.DefaultRetryableErrorCodes[code]
	return throttle || timeout
}
