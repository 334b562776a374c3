package cloud

import (
	"context"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// Departures is a Group whose removed machines may linger on their way
// out, held by hooks of other systems (AWS: lifecycle hooks on
// termination keep an instance in Terminating:Wait). A run waits, bounded,
// for each machine it removes to be gone, and never lets go of another
// system's hook itself. A Group without it is taken at its word.
type Departures interface {
	Scaler
	// MachineOf names a node's machine; "" when the node is gone.
	MachineOf(ctx context.Context, node string) (string, error)
	// Leaving says where each removed machine is on its way out, by
	// machine, in as few calls as the cloud allows: a run looks at all
	// the machines it waits for at once.
	Leaving(ctx context.Context, machines []string) (map[string]Departure, error)
}

// Departure is where a removed machine is on its way out.
type Departure struct {
	// Gone says nothing of it is left in the group.
	Gone bool
	// Lifecycle is the provider's word for its state (Terminating:Wait);
	// HeldBy the hooks that hold it there, empty when nothing does.
	Lifecycle string
	HeldBy    []plan.LeaveHook
}
