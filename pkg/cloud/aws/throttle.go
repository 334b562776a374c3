package aws

import (
	"errors"
	"io"

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

// cloudAttempts bounds the attempts of one call: the SDK's standard
// retryer waits a full-jitter exponential backoff of at most 20 s between
// two, so 12 attempts ride out about two minutes of an API that throttles,
// answers 5xx or resets connections (at most 3m40s), as
// --request-retry-timeout's default does for the API server. The SDK's
// default, 3, gives up within seconds.
const cloudAttempts = 12

// newRetryer is the one retryer every client of a provider shares: the
// SDK's standard one with cloudAttempts, retrying answers cut off too, and
// without its retry quota. By default each client has a bucket of 500
// tokens that every call failing after its retries drains by 10, and once
// it is empty a call fails at its first throttle: in a run of hours
// against a busy account, the waits' throttled looks (which back off on
// their own, see cloud.Transient) would empty it, and then the next call
// that changes the group would end the run.
//
// Every call that changes something is safe to send again: the SDK sends
// each attempt of a CreateLaunchTemplateVersion or CreateNodegroup with
// the same idempotency token, and the others set absolute values or find
// what they meant to make (AlreadyExists, a group or instance not found).
//
// Options (tests' shorter waits) apply after these.
func newRetryer(opts ...func(*retry.StandardOptions)) sdkaws.Retryer {
	return retry.NewStandard(append([]func(*retry.StandardOptions){func(o *retry.StandardOptions) {
		o.RateLimiter = ratelimit.None
		o.MaxAttempts = cloudAttempts
		o.Retryables = append(o.Retryables, cutAnswer{})
	}}, opts...)...)
}

// cutAnswer retries a call whose answer ended before it was whole: the
// connection was closed, without a reset the SDK would retry.
type cutAnswer struct{}

func (cutAnswer) IsErrorRetryable(err error) sdkaws.Ternary {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return sdkaws.TrueTernary
	}
	return sdkaws.UnknownTernary
}

// retryable classifies errors as the shared retryer does.
var retryable = newRetryer()

// transient reports whether an error that outlasted the SDK's retries may
// pass later (see cloud.Transient): AWS throttled the call, answered 5xx,
// or the connection failed.
func transient(err error, code string) bool {
	return throttled(code) || retryable.IsErrorRetryable(err)
}
