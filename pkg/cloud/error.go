package cloud

import "fmt"

// Error is a provider's error, short enough for one line of CLI output,
// the client's error reachable behind it through errors.As: Input marks
// what the user fixes (exit 2, nothing changed), Transient what passes
// with time (see Transient). The Google and Azure providers share it.
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
// unavailable.
func (e *Error) Transient() bool { return e.IsTransient }

// Inputf is an error the user fixes.
func Inputf(format string, args ...any) error {
	return &Error{Msg: fmt.Sprintf(format, args...), IsInput: true}
}
