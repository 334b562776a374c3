package cloud

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// ManagedUpdater is a provider whose cloud service runs the update of the
// group itself (EKS managed node groups: UpdateNodegroupVersion; GKE node
// pools: nodePools.update). The run never changes the group's machines
// behind the service's back: it sets the service's update settings for the
// run, starts the update once, follows it naming what holds it, and puts
// the settings back. Every method may be called again after an
// interruption.
type ManagedUpdater interface {
	Provider
	// GroupName names the group for messages and the record.
	GroupName() string
	// Settings reads the group's update settings now.
	Settings(ctx context.Context) (plan.UpdateSettings, error)
	// Configure sets the group's update settings and returns once the
	// service applies them (a settings change may itself be an update
	// the next one has to wait for).
	Configure(ctx context.Context, s plan.UpdateSettings) error
	// StartUpdate starts the service's update towards the target, or
	// returns the one in progress: never a second one.
	StartUpdate(ctx context.Context, force bool) (id string, err error)
	// Progress reads the update.
	Progress(ctx context.Context, id string) (UpdateProgress, error)
}

// UpdateFinder is a ManagedUpdater that tells the update under way on its
// group: a run killed after it started the update, before it recorded
// the update's ID, is found again by the next run, which then follows it
// rather than planning and auditing what the service does.
type UpdateFinder interface {
	// RunningUpdate is the ID of the group's update in progress, "" if
	// none.
	RunningUpdate(ctx context.Context) (string, error)
}

// UpdateState is where a service's update is.
type UpdateState string

const (
	UpdateInProgress UpdateState = "InProgress"
	UpdateSucceeded  UpdateState = "Succeeded"
	UpdateFailed     UpdateState = "Failed"
	UpdateCancelled  UpdateState = "Cancelled"
	// UpdateQuarantined: the service ended its update with nodes it
	// could not drain left cordoned (AKS's undrainableNodeBehavior
	// Cordon), named in Errors; not a user's cancel.
	UpdateQuarantined UpdateState = "Quarantined"
)

// UpdateProgress is a service update as the service reports it.
type UpdateProgress struct {
	ID    string
	State UpdateState
	// Phase is the service's own word for where it is ("" when it says
	// none); Done and Total count nodes where it says (0 otherwise).
	Phase       string
	Done, Total int
	// Errors are the service's errors: they name nodes, never pods.
	Errors []UpdateError
	// BlueDeletion is when the service starts deleting blue at the end
	// of a blue/green soak (GKE's bluePoolDeletionStartTime); zero when
	// it says none.
	BlueDeletion time.Time
}

// Finished reports whether the service is done with the update.
func (p UpdateProgress) Finished() bool { return p.State != UpdateInProgress }

// UpdateError is one error of a service update.
type UpdateError struct {
	// Code is the service's error code, or, where the failure is one of
	// them, CodePodEviction or CodeNodeCreation (EKS's codes, which every
	// provider maps its service's to: they decide the exit code).
	Code    string
	Message string
	// Nodes are the nodes (or machines) the service names.
	Nodes []string
	// Drain is, for a drain the service gave up on, the pod and PDB it
	// names and what it did with the node and its surge nodes; nil
	// otherwise.
	Drain *plan.ServiceDrainFailure
}

// The failures of a service's update that every provider names alike.
const (
	// CodePodEviction: a node's drain failed, its pods held (by a PDB).
	CodePodEviction = "PodEvictionFailure"
	// CodeNodeCreation: the new machines did not launch or join.
	CodeNodeCreation = "NodeCreationFailure"
)

func (e UpdateError) Error() string {
	msg := fmt.Sprintf("%s: %s", e.Code, e.Message)
	if len(e.Nodes) > 0 && !strings.Contains(e.Message, e.Nodes[0]) {
		msg += " (nodes " + strings.Join(e.Nodes, ", ") + ")"
	}
	return msg
}

// The controls a service may offer on its update, each optional: a
// provider implements those its service has, and the plan and the
// commands say plainly where it has none.
type (
	// UpdateCanceller stops the service's update (nodes under way
	// finish).
	UpdateCanceller interface {
		CancelUpdate(ctx context.Context, id string) error
	}
	// UpdateResumer continues a cancelled update and returns the ID of
	// the update that does it.
	UpdateResumer interface {
		ResumeUpdate(ctx context.Context, id string) (string, error)
	}
	// UpdateRollbacker rolls back the nodes a cancelled or failed update
	// upgraded and returns the ID of the update that does it.
	UpdateRollbacker interface {
		RollbackUpdate(ctx context.Context, id string) (string, error)
	}
	// UpdateCompleter ends a soak of the service's update early.
	UpdateCompleter interface {
		CompleteUpdate(ctx context.Context, id string) error
	}
	// UpdateAborter says what abort cannot do itself on a service's
	// update that has not ended: only the service stops or undoes it, and
	// what it allows depends on where the update is. AbortAdvice reads
	// update id and returns, in one sentence that names the commands (for
	// node group group), what can be done instead; "" when the update has
	// ended and abort may go on.
	UpdateAborter interface {
		AbortAdvice(ctx context.Context, id, group string) (string, error)
	}
)

// ServicePlanner is the planning side of a group whose cloud service runs
// the update itself (see ManagedUpdater): the provider's knowledge of its
// service, which the planner asks through the view ServiceOf makes.
type ServicePlanner interface {
	// Runs reports whether the service runs strategy itself.
	Runs(strategy StrategyName) bool
	// Plan derives what the service will do for the input over nodes
	// nodes in zones zones, refusing as an input error what the service
	// would refuse.
	Plan(in plan.Input, nodes, zones int) (*plan.ManagedPlan, error)
}

// OwnStrategy is a ServicePlanner whose group has an update strategy of
// its own, with its settings, that the service runs when asked for none
// (GKE: the node pool's upgradeSettings; AKS: its surge upgrade).
type OwnStrategy interface {
	OwnStrategy() GroupStrategy
}

// ServiceOf is the planner's view of sp (plan.CloudGroup.Managed).
func ServiceOf(sp ServicePlanner) *plan.Service {
	s := &plan.Service{Runs: sp.Runs, Plan: sp.Plan}
	if o, ok := sp.(OwnStrategy); ok {
		own := o.OwnStrategy()
		s.Own = &own
	}
	return s
}

// ManagedControls lists the controls p offers, by command name.
func ManagedControls(p Provider) []string {
	var out []string
	if _, ok := p.(UpdateCanceller); ok {
		out = append(out, "cancel")
	}
	if _, ok := p.(UpdateResumer); ok {
		out = append(out, "resume")
	}
	if _, ok := p.(UpdateRollbacker); ok {
		out = append(out, "rollback")
	}
	if _, ok := p.(UpdateCompleter); ok {
		out = append(out, "complete")
	}
	return out
}
