package session

import (
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/internal/upgrade"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// LeaveMachinesRunningFlag is the one way past the machine-left-running
// blocker: its name says what happens.
const LeaveMachinesRunningFlag = "leave-machines-running"

// Request is what a command asks for: the typed request a run records,
// where it came from, and what validating it resolved. Validate it
// before planning.
type Request struct {
	plan.Request
	// Given are the flags given on the command line; nil when the request
	// comes from a record (resume, rollback, abort).
	Given map[string]bool
	// Bound are the clouds' flags: who takes each, what each names.
	Bound *cloud.Bound
	// Namespace limits the audit; "" for all namespaces.
	Namespace string
	// Rollback runs only the rollback (the rollback command).
	Rollback bool
	// NoWait stops a blue/green run at its soak.
	NoWait bool
	// JoinTimeout, when set (a run), is how long planning waits for the
	// group's machines that are not nodes yet; plan only notes them.
	JoinTimeout time.Duration
	// SavedPlan is the plan --plan-file names, read by LoadPlanFile.
	SavedPlan *plan.Plan
	// Fleet is the fleet ("NAME@HASH") whose coordinator starts the run,
	// stamped on its record.
	Fleet string
	// Control is the operator's control (resume, rollback) that runs the
	// recorded run again: recorded as asked once the run is agreed, before
	// it acts (Execute); the attempt that carries it out answers it
	// (answerAsked). "" for a run command.
	Control Command

	strategy     plan.Strategy
	targetLabels map[string]string
	taint        *corev1.Taint
}

// ResolvedStrategy is the request's strategy, once validated.
func (r *Request) ResolvedStrategy() plan.Strategy { return r.strategy }

// RecordName is the key of the node group's record and lock.
func (r *Request) RecordName() string {
	return RecordName(r.NodeGroup, r.Selector)
}

// RecordName is the key of the record and lock of the group a NODEGROUP
// argument or a --selector names.
func RecordName(group, selector string) string {
	if selector != "" {
		return "-l " + selector
	}
	return group
}

// FromRecord is the request of rec's run, to repeat it (resume, rollback,
// abort), with the provider it ran on where the provider was detected:
// the cloud flags alone need not tell which cloud takes them, as the flags
// given did. action names the command for the error when there is none.
func FromRecord(rec *state.Record, bound *cloud.Bound, action string) (*Request, error) {
	if rec.Request == nil {
		return nil, Usagef("cannot %s: the record of %q holds no request to repeat (made by an older version); run the original command again", action, rec.NodeGroup)
	}
	req := *rec.Request
	if req.Provider == "" && rec.Cloud != nil {
		req.Provider = rec.Cloud.Provider
	}
	if bound == nil {
		bound = cloud.BoundFlags()
	}
	if action == string(CmdRollback) {
		// A rollback puts the group back, as abort does: no maintenance
		// window holds it (its --not-after passed, it would be refused).
		req.Windows, req.NotBefore, req.NotAfter = nil, "", ""
	}
	return &Request{Request: req, Bound: bound}, nil
}

// GroupOrSelector refuses a command given neither NODEGROUP nor a
// selector, or both; what says what NODEGROUP names.
func GroupOrSelector(group, selector, what string) error {
	switch {
	case group == "" && selector == "":
		return Usagef("missing NODEGROUP: give %s or -l/--selector", what)
	case group != "" && selector != "":
		return Usagef("both NODEGROUP %q and --selector given: use one", group)
	}
	return nil
}

// Validate checks the planning request before the cluster is touched, and
// resolves its strategy, target labels and taint.
func (r *Request) Validate() error {
	if err := GroupOrSelector(r.NodeGroup, r.Selector, "the node group name"); err != nil {
		return err
	}
	labels, err := plan.ParseTargetLabels(r.TargetLabels)
	if err != nil {
		return err
	}
	r.targetLabels = labels
	if r.strategy, err = plan.LookupStrategy(r.Request.Strategy); err != nil {
		return err
	}
	if err := r.validateStrategyFlags(); err != nil {
		return err
	}
	if r.Taint != "" {
		t, err := plan.ParseTaint(r.Taint)
		if err != nil {
			return err
		}
		r.taint = &t
	}
	switch r.Order {
	case "", plan.OrderRandom, plan.OrderZoneBalanced:
	default:
		return Usagef("invalid --order %q: must be zone-balanced or random", r.Order)
	}
	if err := r.validateProvider(); err != nil {
		return err
	}
	if err := r.validateUndrainable(); err != nil {
		return err
	}
	if t := r.Hooks.Timeout; t < 0 || t == 0 && r.Given["hook-timeout"] {
		return Usagef("invalid --hook-timeout %s: must be positive", time.Duration(t))
	}
	if _, err := schedule(r.Request); err != nil {
		return err
	}
	if err := r.Waves.Validate(); err != nil {
		return Usagef("%v", err)
	}
	if r.Provider == cloud.NoneName && len(r.TargetLabels) == 0 {
		return Usagef("no target given: use --target-label key=value for the labels up-to-date nodes carry (e.g. eks.amazonaws.com/nodegroup-image=ami-0abc)")
	}
	return nil
}

// validateUndrainable checks --undrainable and --max-blocked-nodes: only
// the strategies whose batches the run drains and removes itself (eks,
// surge) can keep a node back; blue-green deletes its whole blue group.
func (r *Request) validateUndrainable() error {
	switch r.Undrainable {
	case "", upgrade.UndrainableFail:
	case upgrade.UndrainableCordon:
		if n := r.strategy.Name(); n != plan.StrategyEKS && n != plan.StrategySurge {
			return Usagef("invalid --undrainable %q with --strategy %s: only eks and surge keep a node back; use --undrainable fail", r.Undrainable, n)
		}
	default:
		return Usagef("invalid --undrainable %q: must be cordon or fail", r.Undrainable)
	}
	switch {
	case r.MaxBlockedNodes < 0:
		return Usagef("invalid --max-blocked-nodes %d: must not be negative", r.MaxBlockedNodes)
	case r.MaxBlockedNodes > 0 && r.Undrainable != upgrade.UndrainableCordon:
		return Usagef("--max-blocked-nodes takes --undrainable cordon")
	}
	return nil
}

// validateStrategyFlags refuses flags the strategy does not take and
// checks its own settings, with a group as large as they allow: the plan
// checks them again against the real one.
func (r *Request) validateStrategyFlags() error {
	// Without --strategy, a cloud group's own strategy may take them (an
	// AKS pool's surge, --max-surge): Plan refuses them once it knows it.
	if r.Given["strategy"] || !r.Cloud.Given() {
		if err := r.refuseForeignFlags(); err != nil {
			return err
		}
	}
	if r.Given["batch-percent"] && r.Given["batch-node-count"] {
		return Usagef("--batch-node-count and --batch-percent cannot be used together")
	}
	if r.Given["batch-node-count"] && r.BlueGreen.BatchNodes < 0 {
		return Usagef("invalid --batch-node-count %d: must not be negative", r.BlueGreen.BatchNodes)
	}
	_, err := r.strategy.Validate(plan.Input{MaxUnavailable: r.MaxUnavailable, MaxSurge: r.MaxSurge, BlueGreen: r.BlueGreen}, 1)
	return err
}

// ValidateRun checks what a run takes beyond the plan: its timeouts and
// the checks it may ignore. It fills in the defaults a record from before
// a flag lacks.
func (r *Request) ValidateRun() error {
	if err := r.Validate(); err != nil {
		return err
	}
	if err := r.validateTimeouts(); err != nil {
		return err
	}
	for _, name := range r.IgnoreChecks {
		if _, ok := check.SeverityOf(name); !ok {
			return Usagef("invalid --ignore-check %q: must be one of %s", name, strings.Join(check.Names(), ", "))
		}
		if name == check.CheckMachineLeftRunning {
			return Usagef("invalid --ignore-check %q: use --%s to delete those Node objects and leave their machines running, or --delete-node=false", name, LeaveMachinesRunningFlag)
		}
		if name == check.CheckNodeDoNotDisrupt {
			return Usagef("invalid --ignore-check %q: remove the annotation %s from the Node or NodeClaim to let the run replace it", name, check.AnnDoNotDisrupt)
		}
	}
	return nil
}

func (r *Request) validateTimeouts() error {
	if r.TerminateTimeout == 0 && !r.Given["terminate-timeout"] {
		r.TerminateTimeout = upgrade.DefaultTerminateTimeout // a record from before the flag
	}
	if r.DeregistrationTimeout == 0 {
		r.DeregistrationTimeout = plan.DefaultDeregistrationTimeout // a record from before the flag
	}
	for _, d := range []struct {
		flag    string
		value   time.Duration
		canZero bool
	}{
		{"max-age", r.MaxAge, false},
		{"drain-timeout", r.DrainTimeout, false},
		{"node-ready-timeout", r.NodeReadyTimeout, false},
		{"terminate-timeout", r.TerminateTimeout, false},
		{"post-drain-wait", r.PostDrainWait, true},
		{"deregistration-timeout", r.DeregistrationTimeout, false},
	} {
		switch {
		case d.canZero && d.value < 0:
			return Usagef("invalid --%s %s: must not be negative", d.flag, plan.FormatDuration(d.value))
		case !d.canZero && d.value <= 0:
			return Usagef("invalid --%s %s: must be positive", d.flag, plan.FormatDuration(d.value))
		}
	}
	return nil
}

// refuseForeignFlags refuses a flag that only other strategies take: it
// would be silently ignored. A provider's green group flag is refused
// with --green-selector here, where its name is known.
func (r *Request) refuseForeignFlags() error {
	own := r.strategy.Flags()
	byFlag := plan.StrategyFlags()
	for _, name := range sortedKeys(r.Given) {
		as := r.strategyFlag(name)
		takers, special := byFlag[as]
		switch {
		case special && !slices.Contains(own, as):
			return Usagef("--%s needs --strategy %s; --strategy %s does not take it", name, strings.Join(takers, " or "), r.strategy.Name())
		case as == plan.GreenGroupFlag && r.Given["green-selector"]:
			return Usagef("--%s and --green-selector cannot be used together", name)
		}
	}
	return nil
}

// strategyFlag is the name a strategy's Flags know a given flag by: a
// cloud's flag naming an existing green group is plan.GreenGroupFlag.
func (r *Request) strategyFlag(name string) string {
	if r.Bound != nil && slices.Contains(slices.Collect(maps.Values(r.Bound.Green)), name) {
		return plan.GreenGroupFlag
	}
	return name
}

func sortedKeys(m map[string]bool) []string {
	return slices.Sorted(maps.Keys(m))
}
