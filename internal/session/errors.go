package session

import "fmt"

// UsageError is bad input, from a flag, a saved plan or a record: the
// command exits 2 and nothing was changed.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef is a UsageError with a formatted message.
func Usagef(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// BlockerRefusal is run's refusal of a plan with blockers, and plan's
// answer to --detailed-exitcode: exit 5, as check's, so that a script
// tells it from a typo (exit 2). Nothing was changed.
type BlockerRefusal struct{ Msg string }

func (e *BlockerRefusal) Error() string { return e.Msg }
