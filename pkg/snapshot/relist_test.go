package snapshot

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"syscall"
	"testing"
)

// TestCutOff: a list read again is one whose answer broke while it
// streamed in, not one whose request failed before an answer.
func TestCutOff(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("cannot decode the pods list: %w", io.ErrUnexpectedEOF), true},
		{errors.New("stream error: stream ID 7; INTERNAL_ERROR; received from peer"), true},
		{&url.Error{Op: "Get", URL: "https://api/api/v1/pods", Err: syscall.ECONNREFUSED}, false},
		{&url.Error{Op: "Get", URL: "https://api/api/v1/pods", Err: io.ErrUnexpectedEOF}, false},
		{errors.New("pods is forbidden"), false},
	} {
		if got := cutOff(tc.err); got != tc.want {
			t.Errorf("cutOff(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
