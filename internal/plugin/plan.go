package plugin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/internal/upgrade"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/output"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/snapshot"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// PlanOptions are the flags shared by plan and run: what to upgrade and how.
type PlanOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams

	// Request is what the flags ask for, typed; a run records it.
	plan.Request
	Output         string
	StateNamespace string

	// given are the flags given on the command line; empty when the
	// request comes from a record (resume, rollback).
	given         map[string]bool
	strategy      plan.Strategy
	cloudProvider cloud.Provider // the resolved provider when a cloud owns the group
	bound         *cloud.Bound   // the clouds' flags: who takes each, what each names
	targetLabels  map[string]string
	taint         *corev1.Taint
	client        kubernetes.Interface
	context       string
	namespace     string // limits the audit; empty for all namespaces
	// joinTimeout, when set (a run), is how long planning waits for the
	// group's machines that are not nodes yet; plan only notes them.
	joinTimeout time.Duration
}

const planExample = `  # Which nodes of node group "demo" do not run the new AMI, in which batches,
  # and how its Auto Scaling group is resized
  kubectl nodeupgrade plan demo --ami ami-new --max-unavailable 2

  # The same plan, reproducible, as JSON for review or for "run --plan-file"
  kubectl nodeupgrade plan demo --ami ami-new --seed 7 -o json > plan.json

  # Select the nodes by any label, 25% of them per batch, by label only
  kubectl nodeupgrade plan -l eks.amazonaws.com/nodegroup=demo --provider none --target-label eks.amazonaws.com/nodegroup-image=ami-new --max-unavailable 25%`

// NewCmdPlan builds "plan": run's dry run, taking every flag run takes.
func NewCmdPlan(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &RunOptions{PlanOptions: PlanOptions{configFlags: configFlags, IOStreams: streams}, planOnly: true}
	cmd := &cobra.Command{
		Use:   "plan NODEGROUP",
		Short: "Show what an upgrade of a node group would do, changing nothing",
		Long: `Show what "run" would do with the same flags, changing nothing: the nodes
it replaces in which batches, the cloud group's sizes, the phases with an
estimate of their duration (it counts --post-drain-wait), and the workload
audit's findings.

plan takes every flag of run, so a reviewed command line runs by changing
"plan" to "run"; the flags that only say how a run goes (--yes, --dry-run,
--drain-timeout, ...) are accepted and not listed here.`,
		Example: planExample,
		Args:    argsAtMost(1, "one NODEGROUP"),
		RunE:    runE(o),
	}
	o.AddFlags(cmd)
	cmd.Flags().Lookup("output").Usage = "Output format: wide, json, yaml, name (the outdated nodes), jsonpath=... or go-template=... (default: a table)"
	for _, name := range runOnlyFlags {
		if f := cmd.Flags().Lookup(name); f != nil {
			f.Hidden = true
		}
	}
	return cmd
}

// runOnlyFlags are the flags of run that change nothing in the plan: plan
// takes them and keeps them out of its help.
var runOnlyFlags = []string{"yes", "dry-run", "no-wait", "drain-timeout", "node-ready-timeout", "ignore-check", "max-age"}

// AddFlags registers the planning flags.
func (o *PlanOptions) AddFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	r := &o.Request
	f.StringVar(&r.NodeGroupLabel, "nodegroup-label", "", "Label key whose value is the node group name (default: detected among "+fmt.Sprint(plan.NodeGroupLabels)+")")
	f.StringVarP(&r.Selector, "selector", "l", "", "Select the group's nodes by this label selector instead of NODEGROUP")
	f.StringArrayVar(&r.TargetLabels, "target-label", nil, "A label key=value that up-to-date nodes carry (repeatable); nodes lacking any are outdated")
	f.StringVar(&r.Strategy, "strategy", plan.DefaultStrategy, plan.StrategyHelp())
	f.IntVar(&r.MaxSurge, "max-surge", 1, "With --strategy surge: extra nodes per zone while its nodes are replaced (surge + unavailable at most 20)")
	f.IntVar(&r.BlueGreen.BatchNodes, "batch-node-count", 1, "With --strategy blue-green: blue nodes drained per batch; 0 drains none and goes straight to the soak")
	f.Float64Var(&r.BlueGreen.BatchPercent, "batch-percent", 0, "With --strategy blue-green: the batch as a fraction of blue (above 0, at most 1; rounded down, at least 1 node), instead of --batch-node-count")
	durationVar(f, &r.BlueGreen.BatchSoak, "batch-soak", 0, "With --strategy blue-green: wait between drained batches")
	durationVar(f, &r.BlueGreen.NodePoolSoak, "node-pool-soak", time.Hour, "With --strategy blue-green: wait after the last batch before blue is deleted (all soaks at most 7 days); \"complete\" ends it early")
	durationVar(f, &r.BlueGreen.WaitPeriod, "wait-period", 72*time.Hour, "With --strategy autoscaled-blue-green: how long the cluster autoscaler may remove under-used blue nodes before the rest is drained (0 to 7 days)")
	f.StringVar(&r.BlueGreen.GreenSelector, "green-selector", "", "With --strategy blue-green: the green nodes are those this label selector selects (made by someone else, not an Auto Scaling group: neither scaled nor deleted)")
	f.StringVar(&r.MaxUnavailable, "max-unavailable", "1", "Nodes drained at once: 1 to 100, or a percentage of the group such as 25%; with --strategy surge, per zone, default 0")
	f.StringVar(&r.Taint, "taint", "", "Taint put on outdated nodes (default <nodegroup-label>=unschedulable:NoSchedule)")
	f.Int64Var(&r.Seed, "seed", 0, "Seed of the random batch order; the same seed gives plan and run the same batches (default: random, shown in the plan)")
	f.StringVar(&r.Order, "order", "", "Batch order: zone-balanced (nodes from as few zones as possible, PDB budgets kept where a choice allows) or random (default: zone-balanced when the group spans several zones)")
	f.StringVar(&r.Provider, "provider", "", providerUsage())
	o.bound = cloud.BindFlags(f, r)
	f.StringVar(&o.StateNamespace, "state-namespace", state.DefaultNamespace, "Namespace of the run's record (a ConfigMap) and lock (a Lease), one of each per node group")
	f.BoolVar(&r.Force, "force", false, "Delete pods that no controller manages, and pods still running at the drain timeout")
	f.BoolVar(&r.DeleteEmptyDirData, "delete-emptydir-data", false, "Evict pods using emptyDir volumes (their data is lost)")
	f.StringVarP(&o.Output, "output", "o", "", "Output format: wide, json, yaml, name (the outdated nodes), jsonpath=... or go-template=... (default: a table)")
	addHookFlags(f, &r.Hooks)
}

// providerUsage is the --provider help: what each provider does with a
// drained node, in its own words.
func providerUsage() string {
	help := cloud.ProviderHelp()
	var parts []string
	for _, name := range cloud.Names() {
		parts = append(parts, fmt.Sprintf("%s (%s)", name, help[name]))
	}
	return "What removes drained nodes: " + strings.Join(parts, ", ") + "; default: the cloud whose provider IDs every node of the group has, else none"
}

// Complete reads arguments and flags that need no cluster access, and
// fills in the defaults that depend on the strategy.
func (o *PlanOptions) Complete(cmd *cobra.Command, args []string) error {
	if len(args) == 1 {
		o.NodeGroup = args[0]
	}
	o.given = map[string]bool{}
	cmd.Flags().Visit(func(f *pflag.Flag) { o.given[f.Name] = true })
	s, err := plan.LookupStrategy(o.Strategy)
	if err != nil {
		return err
	}
	if !o.given["max-unavailable"] {
		o.MaxUnavailable = s.Traits().DefaultMaxUnavailable
	}
	if o.given["batch-percent"] {
		o.BlueGreen.BatchNodes = -1 // the percentage decides
	} else {
		o.BlueGreen.BatchPercent = 0
	}
	if !o.given["seed"] {
		o.Seed = rand.Int64N(1_000_000)
	}
	return nil
}

// Validate checks every flag before the cluster is touched.
func (o *PlanOptions) Validate() error {
	switch {
	case o.NodeGroup == "" && o.Selector == "":
		return usageErrorf("missing NODEGROUP: give the node group name or -l/--selector")
	case o.NodeGroup != "" && o.Selector != "":
		return usageErrorf("both NODEGROUP %q and --selector given: use one", o.NodeGroup)
	}
	labels, err := plan.ParseTargetLabels(o.TargetLabels)
	if err != nil {
		return err
	}
	o.targetLabels = labels
	if o.strategy, err = plan.LookupStrategy(o.Strategy); err != nil {
		return err
	}
	if err := o.refuseForeignFlags(); err != nil {
		return err
	}
	if o.given["batch-percent"] && o.given["batch-node-count"] {
		return usageErrorf("--batch-node-count and --batch-percent cannot be used together")
	}
	if o.given["batch-node-count"] && o.BlueGreen.BatchNodes < 0 {
		return usageErrorf("invalid --batch-node-count %d: must not be negative", o.BlueGreen.BatchNodes)
	}
	// The strategy's own settings, with a group as large as they allow:
	// the plan checks them again against the real one.
	if _, err := o.strategy.Validate(plan.Input{MaxUnavailable: o.MaxUnavailable, MaxSurge: o.MaxSurge, BlueGreen: o.BlueGreen}, 1); err != nil {
		return err
	}
	if o.Taint != "" {
		t, err := plan.ParseTaint(o.Taint)
		if err != nil {
			return err
		}
		o.taint = &t
	}
	switch o.Order {
	case "", plan.OrderRandom, plan.OrderZoneBalanced:
	default:
		return usageErrorf("invalid --order %q: must be zone-balanced or random", o.Order)
	}
	if err := o.validateProvider(); err != nil {
		return err
	}
	if err := o.validateHooks(); err != nil {
		return err
	}
	if o.Provider == cloud.NoneName && len(o.TargetLabels) == 0 {
		return usageErrorf("no target given: use --target-label key=value for the labels up-to-date nodes carry (e.g. eks.amazonaws.com/nodegroup-image=ami-0abc)")
	}
	if err := output.ValidateTableFormat(o.Output); err != nil {
		return &usageError{err: err}
	}
	return nil
}

// refuseForeignFlags refuses a flag that only other strategies take: it
// would be silently ignored. A provider's green group flag is refused
// with --green-selector here, where its name is known.
func (o *PlanOptions) refuseForeignFlags() error {
	own := o.strategy.Flags()
	byFlag := plan.StrategyFlags()
	for _, name := range sortedKeys(o.given) {
		as := o.strategyFlag(name)
		takers, special := byFlag[as]
		switch {
		case special && !slices.Contains(own, as):
			return usageErrorf("--%s needs --strategy %s; --strategy %s does not take it", name, strings.Join(takers, " or "), o.strategy.Name())
		case as == plan.GreenGroupFlag && o.given["green-selector"]:
			return usageErrorf("--%s and --green-selector cannot be used together", name)
		}
	}
	return nil
}

// strategyFlag is the name a strategy's Flags know a given flag by: a
// cloud's flag naming an existing green group is plan.GreenGroupFlag.
func (o *PlanOptions) strategyFlag(name string) string {
	if slices.Contains(slices.Collect(maps.Values(o.bound.Green)), name) {
		return plan.GreenGroupFlag
	}
	return name
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// validateProvider checks --provider and the cloud flags without calling
// the cloud.
func (o *PlanOptions) validateProvider() error {
	switch _, known := cloud.Lookup(o.Provider); {
	case known:
		if err := o.refuseCloudFlags(o.Provider); err != nil {
			return err
		}
	case o.Provider == "":
	case o.Provider == cloud.NoneName:
		return o.refuseCloudFlags(cloud.NoneName)
	default:
		return usageErrorf("invalid --provider %q: must be one of %s", o.Provider, strings.Join(cloud.Names(), ", "))
	}
	c, err := o.cloudFor(nil)
	if err != nil || c == nil {
		return err
	}
	return c.Validate(o.Cloud)
}

// refuseCloudFlags refuses a cloud flag that provider does not take: it
// would be silently ignored.
func (o *PlanOptions) refuseCloudFlags(provider string) error {
	for _, name := range sortedKeys(o.given) {
		if takers, ok := o.bound.Owners[name]; ok && !slices.Contains(takers, provider) {
			return usageErrorf("--%s needs --provider %s, not --provider %s", name, strings.Join(takers, " or "), provider)
		}
	}
	return nil
}

// cloudFor is the cloud that serves the request: the one --provider names,
// the only one that takes every cloud flag given, or the one that owns
// every node (nil: provider none).
func (o *PlanOptions) cloudFor(nodes []corev1.Node) (cloud.Cloud, error) {
	name := o.Provider
	if name == "" && o.Cloud.Given() {
		if takers := o.cloudsTakingGivenFlags(); len(takers) == 1 {
			name = takers[0]
		}
	}
	if name == "" {
		if nodes == nil {
			return nil, nil // not known before the nodes are listed
		}
		// The nodes decide; the cloud flags given must be the cloud's.
		name = cloud.Detect(nodes)
		if err := o.refuseCloudFlags(name); err != nil {
			return nil, err
		}
	}
	c, _ := cloud.Lookup(name)
	return c, nil
}

// cloudsTakingGivenFlags are the clouds that take every cloud flag given.
func (o *PlanOptions) cloudsTakingGivenFlags() []string {
	names := cloudNames()
	for flag, takers := range o.bound.Owners {
		// A request from a record (resume, rollback) gave the options it holds.
		if o.given[flag] || o.given == nil && o.Cloud.Options[flag] != "" {
			names = slices.DeleteFunc(names, func(n string) bool { return !slices.Contains(takers, n) })
		}
	}
	return names
}

// cloudNames are the registered clouds, sorted: what --provider takes
// besides none.
func cloudNames() []string {
	return slices.DeleteFunc(cloud.Names(), func(n string) bool { return n == cloud.NoneName })
}

// targetFlags says which flags name a target: those of --provider's
// cloud, else every cloud's, each with its --provider.
func (o *PlanOptions) targetFlags() string {
	names := []string{o.Provider}
	if _, ok := cloud.Lookup(o.Provider); !ok {
		names = cloudNames()
	}
	var parts []string
	for _, name := range names {
		if flags := o.bound.Targets[name]; len(flags) > 0 {
			parts = append(parts, orList(prefixed("--", flags))+" with --provider "+name)
		}
	}
	return strings.Join(parts, "; ")
}

// prefixed puts prefix before each of names.
func prefixed(prefix string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + n
	}
	return out
}

// orList is "a", "a or b", "a, b or c".
func orList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// connect builds the client from the kubectl connection flags.
func (o *PlanOptions) connect() error {
	if o.client != nil {
		return nil
	}
	cfg, err := restConfig(o.configFlags)
	if err != nil {
		return err
	}
	o.client, err = kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	o.context = *o.configFlags.Context
	if o.context == "" {
		if raw, err := o.configFlags.ToRawKubeConfigLoader().RawConfig(); err == nil {
			o.context = raw.CurrentContext
		}
	}
	return nil
}

// input is the planning input once the node group label is known.
func (o *PlanOptions) input(snap snapshot.Cluster) (plan.Input, error) {
	return o.inputOf(snap, o.NodeGroup)
}

// groupInput is the planning input for the node group, or for green
// where the group's unfinished run deleted blue, whose name no node
// carries any more (a managed group's green goes by its own). The record
// is read only then.
func (o *PlanOptions) groupInput(ctx context.Context, snap snapshot.Cluster) (plan.Input, error) {
	in, err := o.input(snap)
	if err == nil || o.Selector != "" {
		return in, err
	}
	if green := greenAfterBlue(o.unfinishedRecord(ctx)); green != "" {
		if gin, gerr := o.inputOf(snap, green); gerr == nil {
			return gin, nil
		}
	}
	return in, err
}

// greenAfterBlue is the green group of an unfinished blue/green run that
// was deleting blue, or "".
func greenAfterBlue(rec *state.Record) string {
	if rec == nil || rec.Cloud == nil || plan.Phase(rec.Phase) != plan.PhaseDeleteBlue {
		return ""
	}
	return rec.Cloud.Green
}

// inputOf is the planning input for the node group named group.
func (o *PlanOptions) inputOf(snap snapshot.Cluster, group string) (plan.Input, error) {
	in := plan.Input{
		Context:        o.context,
		NodeGroup:      group,
		Selector:       o.Selector,
		TargetLabels:   o.targetLabels,
		MaxUnavailable: o.MaxUnavailable,
		Provider:       o.Provider,
		Seed:           o.Seed,
		Order:          o.Order,
		Namespace:      o.namespace,
		Force:          o.Force,
		DeleteEmptyDir: o.DeleteEmptyDirData,
		Strategy:       o.Strategy,
		MaxSurge:       o.MaxSurge,
		BlueGreen:      o.BlueGreen,
		PostDrainWait:  o.PostDrainWait,
		Hooks:          o.Hooks,
		// plan and check have no --terminate-timeout of their own: the
		// notes then speak of its default.
		TerminateTimeout: cmp.Or(o.TerminateTimeout, upgrade.DefaultTerminateTimeout),
	}
	in.DeregistrationTimeout = o.DeregistrationTimeout
	if o.Selector == "" {
		key, err := plan.ResolveNodeGroupLabel(snap.Nodes, group, o.NodeGroupLabel)
		if err != nil {
			return in, err
		}
		in.NodeGroupLabel = key
	}
	if o.taint != nil {
		in.Taint = *o.taint
	} else {
		key := in.NodeGroupLabel
		if key == "" {
			key = "nodeupgrade.dev/nodegroup"
		}
		in.Taint = corev1.Taint{Key: key, Value: "unschedulable", Effect: corev1.TaintEffectNoSchedule}
	}
	return in, nil
}

// buildPlan lists the cluster once, reads the cloud group (never changing
// it), and plans.
func (o *PlanOptions) buildPlan(ctx context.Context) (*plan.Plan, error) {
	if err := o.connect(); err != nil {
		return nil, err
	}
	defer collectLessWhilePlanning()()
	snap, err := snapshot.Take(ctx, o.client, func(nodes []corev1.Node) error { return o.refuseOnNodes(ctx, nodes) })
	if err != nil {
		return nil, err
	}
	in, err := o.groupInput(ctx, snap)
	if err != nil {
		return nil, err
	}
	rec := o.unfinishedRecord(ctx)
	if rec != nil {
		in.Recovering = rec.Recovering
	}
	nodes, err := plan.GroupNodes(snap.Nodes, in)
	if err != nil {
		return nil, err
	}
	c, err := o.cloudFor(nodes)
	if err != nil {
		return nil, err
	}
	detected := c
	c, notes, err := o.openCloudOf(ctx, &in, c, nodes, rec)
	if err != nil {
		return nil, err
	}
	askedCloud := detected != nil && c == nil // the cloud said the machines belong to no group
	if c == nil {
		if err := o.refuseNoTarget(in); err != nil {
			return nil, err
		}
	}
	if in.Cloud != nil {
		if joining := in.Cloud.Joining(); len(joining) > 0 {
			if o.joinTimeout > 0 {
				fmt.Fprintf(o.ErrOut, "waiting up to %s for %d %ss of %s %q to join as nodes before planning\n", o.joinTimeout, len(joining), in.Cloud.MachineKind, in.Cloud.GroupKind, in.Cloud.Name)
				if err := cloud.AwaitJoined(ctx, o.client, joining, o.joinTimeout); err != nil {
					return nil, err
				}
				o.joinTimeout = 0
				return o.buildPlan(ctx)
			}
			notes = append(notes, in.Cloud.JoiningNote(joining))
		}
	}
	p, err := plan.Build(snap, in)
	if p != nil {
		p.Notes = append(p.Notes, notes...)
		if c == nil && !askedCloud {
			p.AddBlockers(o.machinesLeftRunning(ctx, p, nodes)...)
		}
	}
	return p, err
}

// openCloudOf opens the nodes' group with c into in. Where c was only
// detected and says the machines belong to no group, provider none serves
// them: the cloud returned is then nil.
func (o *PlanOptions) openCloudOf(ctx context.Context, in *plan.Input, c cloud.Cloud, nodes []corev1.Node, rec *state.Record) (cloud.Cloud, []string, error) {
	in.Provider = cloud.NoneName
	if c == nil {
		return nil, nil, nil
	}
	in.Provider = c.Name()
	var err error
	in.Cloud, err = o.openCloud(ctx, c, nodes, rec)
	switch {
	case err == nil:
		return c, nil, nil
	case o.Provider == "" && !o.Cloud.Given() && errors.Is(err, cloud.ErrNoGroup) && len(o.targetLabels) > 0:
		// Detected from the provider IDs, but no group of the cloud has
		// them (Karpenter's, standalone): nodes are only deleted.
		note := fmt.Sprintf("provider none: the nodes are %s machines of no group (%v), so their Node objects are deleted and the machines left to whoever made them", c.Name(), err)
		in.Provider, in.Cloud = cloud.NoneName, nil
		return nil, []string{note}, nil
	case o.Provider == "" && !o.Cloud.Given():
		// --provider none only with --leave-machines-running: alone it would
		// delete the Node objects of machines a group may keep running.
		return nil, nil, fmt.Errorf("%w (provider %s was chosen from the nodes' provider IDs; if no group keeps these machines, as with Karpenter's or standalone ones, --provider none --%s deletes only their Node objects)",
			err, c.Name(), leaveMachinesRunningFlag)
	}
	return nil, nil, err
}

// refuseOnNodes refuses, once the nodes are listed and before the pods
// are, what buildPlan would refuse from the nodes alone: a node group no
// node carries, a --selector no node matches, and no target where the
// nodes are of no cloud the plugin knows.
func (o *PlanOptions) refuseOnNodes(ctx context.Context, nodes []corev1.Node) error {
	in, err := o.groupInput(ctx, snapshot.Cluster{Nodes: nodes})
	if err != nil {
		return err
	}
	group, err := plan.GroupNodes(nodes, in)
	if err != nil {
		return err
	}
	c, err := o.cloudFor(group)
	if err != nil || c != nil {
		return err
	}
	in.Provider = cloud.NoneName
	return o.refuseNoTarget(in)
}

// refuseNoTarget refuses a plan without a cloud that has no target labels
// either: nothing would tell an outdated node from an up-to-date one.
func (o *PlanOptions) refuseNoTarget(in plan.Input) error {
	if len(o.targetLabels) == 0 && plan.CapRemoveNodes.Has(o.strategy.Needs(in)) {
		return usageErrorf("no target given: use --target-label key=value for the labels up-to-date nodes carry (e.g. eks.amazonaws.com/nodegroup-image=ami-0abc), or the --provider of the cloud whose group keeps the nodes (%s)", orList(cloudNames()))
	}
	return nil
}

// unfinishedRecord is the record of the node group's unfinished run, or
// nil. One that cannot be read is taken as none here: run reads it
// again under the group's lock and stops on the error.
func (o *PlanOptions) unfinishedRecord(ctx context.Context) *state.Record {
	store := &state.Store{Client: o.client, Namespace: o.StateNamespace}
	rec, err := store.Load(ctx, o.recordName())
	if err != nil || rec == nil || rec.FinishedAt != nil {
		return nil
	}
	return rec
}

// openCloud reads the node group's cloud group and the target, and keeps
// the group the run changes. It only reads. rec is the unfinished run's
// record, or nil.
func (o *PlanOptions) openCloud(ctx context.Context, c cloud.Cloud, nodes []corev1.Node, rec *state.Record) (*plan.CloudGroup, error) {
	// An unfinished run knows its group: after a blue/green run made green,
	// the nodes span two groups.
	if rec != nil && rec.Cloud == nil {
		rec = nil
	}
	target := o.Cloud
	target.Strategy = o.strategy.Name()
	if target.Group == "" && rec != nil {
		target.Group = rec.Cloud.Group
	}
	if g := o.BlueGreen.GreenGroup; g != "" {
		target.Exclude = append(target.Exclude, g)
	}
	cg, group, err := cloud.OpenGroup(ctx, c, o.client, nodes, target)
	if deletedBlue(rec, target, err) {
		// The run got as far as deleting blue's group: green is the group
		// now, and the run only finishes what follows the deletion.
		target.Group = rec.Cloud.Green
		if cg, group, err = cloud.OpenGroup(ctx, c, o.client, nodes, target); err == nil {
			cg.BlueDeleted = rec.Cloud.Group
		}
	}
	if err != nil {
		return nil, err
	}
	// An interrupted run scaled the group up already: the plan says so and
	// shows the sizes the end restores.
	if rec != nil && rec.Cloud.Original != nil && rec.Cloud.Group == cg.Name && o.strategy.Traits().ScalesGroup {
		cg.Recorded = rec.Cloud.Original
		if rec.Cloud.ScaledForOther(cg.TargetVersion) {
			cg.RescaleFrom = rec.Cloud.ScaledFor
		}
	}
	o.cloudProvider = group
	return cg, nil
}

// deletedBlue reports whether err says the group an interrupted blue/green
// run was deleting is gone: the kill came after the delete and before the
// record of it.
func deletedBlue(rec *state.Record, target plan.CloudTarget, err error) bool {
	return err != nil && errors.Is(err, cloud.ErrGroupNotFound) && rec != nil &&
		plan.Phase(rec.Phase) == plan.PhaseDeleteBlue && rec.Cloud.Green != "" && target.Group == rec.Cloud.Group
}

func (o *PlanOptions) printPlan(p *plan.Plan) error {
	if !output.IsTable(o.Output) {
		return output.Print(o.Out, o.Output, p)
	}
	return plan.WriteTable(o.Out, p, time.Now(), output.Colorizer(output.ColorEnabled(o.Out)), o.Output == output.FormatWide)
}

// recordName is the key of the node group's record and lock.
func (o *PlanOptions) recordName() string {
	if o.Selector != "" {
		return "-l " + o.Selector
	}
	return o.NodeGroup
}

// planningGCPercent is the garbage collector's GOGC while a plan is built.
// The snapshot keeps most of what it allocates (a 150,000-pod plan
// allocates about 400 MB and keeps about 230 until the plan is built), so
// a collection at the default's pace (GOGC=100: whenever the heap doubles)
// marks the snapshot's pods again and frees little. At that scale the
// collector took 120 ms of CPU at the default and 70 ms at 400
// (GODEBUG=gctrace=1), for no more peak memory: the plan allocates little
// beyond what it keeps, and five times the live heap still bounds what is
// left uncollected on a cluster larger still.
const planningGCPercent = 400

// collectLessWhilePlanning raises GOGC to planningGCPercent until the
// returned func is called, unless the user set GOGC: the run that follows
// a plan holds its informers' objects for hours, at the default.
func collectLessWhilePlanning() (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	old := debug.SetGCPercent(planningGCPercent)
	return func() { debug.SetGCPercent(old) }
}
