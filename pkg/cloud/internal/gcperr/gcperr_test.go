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
