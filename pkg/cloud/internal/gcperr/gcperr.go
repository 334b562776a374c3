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
)

// Error is a provider's error.
type Error struct {
	Msg                  string
	Err                  error
	IsInput, IsTransient bool
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Err }

// Input reports whether the error is the user's to fix (a flag, the
// credentials): the command exits 2, and nothing was changed.
func (e *Error) Input() bool { return e.IsInput }

// Transient reports whether the API throttled the call or was briefly
// unavailable (see cloud.Transient).
func (e *Error) Transient() bool { return e.IsTransient }

// Inputf is an error the user fixes.
func Inputf(format string, args ...any) error {
	return &Error{Msg: fmt.Sprintf(format, args...), IsInput: true}
}

// Wrap prefixes a client error with what could not be done ("cannot
// ..."), keeping the API's code and message. An error that is not the
// API's answer is kept as the cause only with keepCause.
func Wrap(err error, keepCause bool, format string, args ...any) error {
	msg := "cannot " + fmt.Sprintf(format, args...)
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		transient := ge.Code == http.StatusTooManyRequests || ge.Code == http.StatusServiceUnavailable
		return &Error{Msg: fmt.Sprintf("%s: %d %s", msg, ge.Code, OneLine(ge.Message)), Err: err, IsTransient: transient}
	}
	out := &Error{Msg: msg + ": " + OneLine(err.Error())}
	if keepCause {
		out.Err = err
	}
	return out
}

// OneLine is the first line of s without a trailing period.
func OneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimRight(s, ".")
}
