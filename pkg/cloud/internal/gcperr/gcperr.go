// Package gcperr is the error of the Google Cloud providers (gce, gke):
// short enough for one line of CLI output, the client's error reachable
// behind it through errors.As.
package gcperr

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"google.golang.org/api/googleapi"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
)

// Error is the providers' error (cloud.Error).
type Error = cloud.Error

// Inputf is an error the user fixes.
var Inputf = cloud.Inputf

// Wrap prefixes a client error with what could not be done ("cannot
// ..."), keeping the API's code and message. An error that is not the
// API's answer is kept as the cause only with keepCause, or where it is
// the endpoint's failure to answer (a cloud.UnreachableError), which
// reads as no Kubernetes API server's.
func Wrap(err error, keepCause bool, format string, args ...any) error {
	msg := "cannot " + fmt.Sprintf(format, args...)
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		transient := Throttled(ge) || TransientCode(ge)
		return &Error{Msg: fmt.Sprintf("%s: %d %s", msg, ge.Code, OneLine(ge.Message)), Err: err, IsTransient: transient}
	}
	out := &Error{Msg: msg + ": " + OneLine(err.Error())}
	var unreachable *cloud.UnreachableError
	if keepCause || errors.As(err, &unreachable) {
		out.Err = err
	}
	return out
}

// Throttled reports whether Google refused the call for its rate, so did
// not do it: 429 (RESOURCE_EXHAUSTED,
// https://cloud.google.com/apis/design/errors#handling_errors), and
// Compute's 403 with reason rateLimitExceeded or userRateLimitExceeded
// (https://cloud.google.com/compute/docs/api/handle-api-errors#rate_limit_errors
// and https://cloud.google.com/compute/api-quotas#exceeding_rate_limits).
func Throttled(ge *googleapi.Error) bool {
	if ge.Code == http.StatusTooManyRequests {
		return true
	}
	if ge.Code != http.StatusForbidden {
		return false
	}
	for _, e := range ge.Errors {
		if e.Reason == "rateLimitExceeded" || e.Reason == "userRateLimitExceeded" {
			return true
		}
	}
	return false
}

// TransientCode reports whether the answer is one Google's guidance says
// to retry with backoff: 500, 502, 503, 504 and the throttling of
// Throttled (https://cloud.google.com/storage/docs/retry-strategy and
// https://cloud.google.com/apis/design/errors#retrying_errors: INTERNAL,
// UNAVAILABLE, DEADLINE_EXCEEDED).
func TransientCode(ge *googleapi.Error) bool {
	switch ge.Code {
	case http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return Throttled(ge)
}

// OneLine is the first line of s without a trailing period.
func OneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimRight(s, ".")
}
