package gcperr

import (
	"errors"
	"net/http"
	"testing"

	"google.golang.org/api/googleapi"
)

func TestWrap(t *testing.T) {
	conn := errors.New("dial tcp: connection refused\nmore")
	for _, tc := range []struct {
		name           string
		err            error
		keepCause      bool
		msg            string
		transient, has bool // has: the cause is reachable
	}{
		{name: "the API's answer", err: &googleapi.Error{Code: http.StatusNotFound, Message: "not found."}, msg: "cannot get x: 404 not found", has: true},
		{name: "throttled", err: &googleapi.Error{Code: http.StatusTooManyRequests, Message: "slow down"}, msg: "cannot get x: 429 slow down", transient: true, has: true},
		{name: "Compute's rate limit", err: &googleapi.Error{Code: http.StatusForbidden, Message: "rate", Errors: []googleapi.ErrorItem{{Reason: "rateLimitExceeded"}}}, msg: "cannot get x: 403 rate", transient: true, has: true},
		{name: "the user's rate limit", err: &googleapi.Error{Code: http.StatusForbidden, Message: "rate", Errors: []googleapi.ErrorItem{{Reason: "userRateLimitExceeded"}}}, msg: "cannot get x: 403 rate", transient: true, has: true},
		{name: "forbidden", err: &googleapi.Error{Code: http.StatusForbidden, Message: "no", Errors: []googleapi.ErrorItem{{Reason: "forbidden"}}}, msg: "cannot get x: 403 no", has: true},
		{name: "internal", err: &googleapi.Error{Code: http.StatusInternalServerError, Message: "oops"}, msg: "cannot get x: 500 oops", transient: true, has: true},
		{name: "bad gateway", err: &googleapi.Error{Code: http.StatusBadGateway, Message: "gw"}, msg: "cannot get x: 502 gw", transient: true, has: true},
		{name: "gateway timeout", err: &googleapi.Error{Code: http.StatusGatewayTimeout, Message: "gw"}, msg: "cannot get x: 504 gw", transient: true, has: true},
		{name: "another error, dropped", err: conn, msg: "cannot get x: dial tcp: connection refused"},
		{name: "another error, kept", err: conn, keepCause: true, msg: "cannot get x: dial tcp: connection refused", has: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Wrap(tc.err, tc.keepCause, "get %s", "x")
			var e *Error
			if !errors.As(err, &e) || e.Error() != tc.msg || e.Transient() != tc.transient || e.Input() || errors.Is(err, tc.err) != tc.has {
				t.Errorf("Wrap = %q (transient %v, cause kept %v), want %q (transient %v, cause kept %v)", err, e.Transient(), errors.Is(err, tc.err), tc.msg, tc.transient, tc.has)
			}
		})
	}
	if e := Inputf("bad %q", "flag"); e.Error() != `bad "flag"` || !e.(*Error).Input() {
		t.Errorf("Inputf = %v", e)
	}
}
