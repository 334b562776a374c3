package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/drain"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/upgrade"
)

// Exit codes, documented in the README.
const (
	ExitOK               = 0
	ExitFailure          = 4 // anything else, including an interrupted run
	ExitUsage            = 2 // bad input; nothing was changed
	ExitPodEvictionError = 3 // PodEvictionFailure: pods did not leave within --drain-timeout
	ExitBlockers         = 5 // check found blockers
	ExitLocked           = 6 // another run holds the node group's lock
	ExitNodeCreation     = 7 // NodeCreationFailure: new nodes did not become Ready within --node-ready-timeout
	ExitPaused           = 8 // the run stopped on purpose: paused by cancel, or left soaking (--no-wait)
)

// usageError marks bad input: exit 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return &usageError{err: fmt.Errorf(format, args...)}
}

// ExitCode maps an error from a command to the process exit code.
func ExitCode(err error) int {
	var usage *usageError
	var input *plan.InputError
	var eviction *drain.PodEvictionFailure
	var blockers *blockersFound
	var held *state.HeldError
	var creation *upgrade.NodeCreationFailure
	var paused *upgrade.PausedError
	var soaking *upgrade.SoakingError
	var cloudInput interface{ Input() bool }
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &usage), errors.As(err, &input):
		return ExitUsage
	case errors.As(err, &cloudInput) && cloudInput.Input():
		return ExitUsage
	case errors.As(err, &creation):
		return ExitNodeCreation
	case errors.As(err, &paused), errors.As(err, &soaking):
		return ExitPaused
	case errors.As(err, &eviction):
		return ExitPodEvictionError
	case errors.As(err, &blockers):
		return ExitBlockers
	case errors.As(err, &held):
		return ExitLocked
	}
	return ExitFailure
}

// PrintError writes the one-line error kubectl-style and returns the exit code.
func PrintError(w io.Writer, err error) int {
	if err == nil {
		return ExitOK
	}
	msg := err.Error()
	if errors.Is(err, context.Canceled) {
		msg = "interrupted; run the same command again to finish the upgrade"
	}
	fmt.Fprintf(w, "error: %s\n", msg)
	return ExitCode(err)
}
