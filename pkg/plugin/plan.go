package plugin

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/output"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// PlanOptions are the flags shared by plan and run: what to upgrade and how.
type PlanOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams

	NodeGroup          string
	NodeGroupLabel     string
	Selector           string
	TargetLabels       []string
	MaxUnavailable     string
	Taint              string
	Seed               int64
	Order              string
	Provider           string
	Force              bool
	DeleteEmptyDirData bool
	Output             string
	StateNamespace     string
	Strategy           string
	MaxSurge           int
	// BlueGreen holds the blue/green flags as planning takes them.
	BlueGreen plan.BlueGreenInput
	// The AWS provider's flags.
	Region, Profile, ASG string
	AMI, TemplateVersion string

	seedSet                        bool
	maxSurgeSet                    bool
	batchPercentSet, batchCountSet bool
	cloudGroup                     cloud.Group // the resolved provider when it owns a group
	targetLabels                   map[string]string
	taint                          *corev1.Taint
	client                         kubernetes.Interface
	context                        string
	namespace                      string // limits the audit; empty for all namespaces
}

const planExample = `  # Show which nodes of node group "workers" lack the new AMI, and the batches
  kubectl nodeupgrade plan workers --target-label eks.amazonaws.com/nodegroup-image=ami-0abc

  # The same plan, reproducible, as JSON for review or for "run --plan-file"
  kubectl nodeupgrade plan workers --target-label eks.amazonaws.com/nodegroup-image=ami-0abc --seed 7 -o json > plan.json

  # Select the nodes by any label, 25% of them per batch
  kubectl nodeupgrade plan -l pool=batch --target-label image=v2 --max-unavailable 25%`

// NewCmdPlan builds "plan": the dry run.
func NewCmdPlan(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &PlanOptions{configFlags: configFlags, IOStreams: streams}
	cmd := &cobra.Command{
		Use:     "plan NODEGROUP",
		Short:   "Show what an upgrade of a node group would do, changing nothing",
		Example: planExample,
		Args:    argsAtMost(1, "one NODEGROUP"),
		RunE:    runE(o),
	}
	o.AddFlags(cmd)
	return cmd
}

// AddFlags registers the planning flags.
func (o *PlanOptions) AddFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.NodeGroupLabel, "nodegroup-label", "", "Label key whose value is the node group name (default: detected among "+fmt.Sprint(plan.NodeGroupLabels)+")")
	f.StringVarP(&o.Selector, "selector", "l", "", "Select the group's nodes by this label selector instead of NODEGROUP")
	f.StringArrayVar(&o.TargetLabels, "target-label", nil, "A label key=value that up-to-date nodes carry (repeatable); nodes lacking any are outdated")
	f.StringVar(&o.Strategy, "strategy", plan.StrategyEKS, `How to replace the nodes: eks (scale up, taint all outdated nodes, drain in batches, scale down); surge (GKE's: one zone at a time, per node a surge node first; profiles: --max-surge 1 --max-unavailable 0 balanced (the default), 0/20 fast without extra nodes, 20/0 fast and gentle, 0/1 slow without extra nodes); blue-green (a green group beside blue, blue cordoned and drained in batches, soaked, then deleted); short-lived (only point the group at the target: nothing is drained, old nodes go away on their own); autoscaled-blue-green (green starts at 0 and the cluster autoscaler grows it while blue, cordoned, shrinks; after --wait-period the rest of blue is drained)`)
	f.IntVar(&o.MaxSurge, "max-surge", 1, "With --strategy surge: extra nodes per zone while its nodes are replaced (surge + unavailable at most 20)")
	f.IntVar(&o.BlueGreen.BatchNodes, "batch-node-count", 1, "With --strategy blue-green: blue nodes drained per batch; 0 drains none and goes straight to the soak")
	f.Float64Var(&o.BlueGreen.BatchPercent, "batch-percent", 0, "With --strategy blue-green: the batch as a fraction of blue (above 0, at most 1; rounded down, at least 1 node), instead of --batch-node-count")
	f.DurationVar(&o.BlueGreen.BatchSoak, "batch-soak", 0, "With --strategy blue-green: wait between drained batches")
	f.DurationVar(&o.BlueGreen.NodePoolSoak, "node-pool-soak", time.Hour, "With --strategy blue-green: wait after the last batch before blue is deleted (all soaks at most 7 days); \"complete\" ends it early")
	f.DurationVar(&o.BlueGreen.WaitPeriod, "wait-period", 72*time.Hour, "With --strategy autoscaled-blue-green: how long the cluster autoscaler may remove under-used blue nodes before the rest is drained (0 to 7 days)")
	f.StringVar(&o.BlueGreen.GreenSelector, "green-selector", "", "With --strategy blue-green: the green nodes are those this label selector selects (made by someone else, not an Auto Scaling group: neither scaled nor deleted)")
	f.StringVar(&o.BlueGreen.GreenASG, "green-asg", "", "With --strategy blue-green: use this existing Auto Scaling group as green instead of creating one")
	f.StringVar(&o.MaxUnavailable, "max-unavailable", "1", "Nodes drained at once: 1 to 100, or a percentage of the group such as 25%; with --strategy surge, per zone, default 0")
	f.StringVar(&o.Taint, "taint", "", "Taint put on outdated nodes (default <nodegroup-label>=unschedulable:NoSchedule)")
	f.Int64Var(&o.Seed, "seed", 0, "Seed of the random batch order; the same seed gives plan and run the same batches (default: random, shown in the plan)")
	f.StringVar(&o.Order, "order", "", "Batch order: zone-balanced (nodes from as few zones as possible, PDB budgets kept where a choice allows) or random (default: zone-balanced when the group spans several zones)")
	f.StringVar(&o.Provider, "provider", "", "What removes drained nodes: aws (terminate the instance; its Auto Scaling group launches the replacement) or none (delete the Node object, or see --delete-node); default aws when the group's nodes have aws:/// provider IDs, else none")
	f.StringVar(&o.Region, "region", "", "AWS region (default: the SDK's configuration, AWS_REGION or the profile's, else the region of the nodes' zones)")
	f.StringVar(&o.Profile, "profile", "", "AWS shared configuration profile (default: AWS_PROFILE or the default profile)")
	f.StringVar(&o.ASG, "asg", "", "Auto Scaling group of the node group (default: found from the nodes' instance IDs)")
	f.StringVar(&o.AMI, "ami", "", "Upgrade to this AMI: run creates a launch template version from the group's current one with only the image changed")
	f.StringVar(&o.TemplateVersion, "launch-template-version", "", "Upgrade to this existing launch template version (a number, $Latest or $Default)")
	f.StringVar(&o.StateNamespace, "state-namespace", state.DefaultNamespace, "Namespace of the run's record (a ConfigMap) and lock (a Lease), one of each per node group")
	f.BoolVar(&o.Force, "force", false, "Delete pods that no controller manages, and pods still running at the drain timeout")
	f.BoolVar(&o.DeleteEmptyDirData, "delete-emptydir-data", false, "Evict pods using emptyDir volumes (their data is lost)")
	f.StringVarP(&o.Output, "output", "o", "", "Output format: json or yaml (default: a table)")
}

// Complete reads arguments and flags that need no cluster access.
func (o *PlanOptions) Complete(cmd *cobra.Command, args []string) error {
	if len(args) == 1 {
		o.NodeGroup = args[0]
	}
	o.seedSet = cmd.Flags().Changed("seed")
	if o.Strategy == plan.StrategySurge && !cmd.Flags().Changed("max-unavailable") {
		o.MaxUnavailable = "0"
	}
	o.maxSurgeSet = cmd.Flags().Changed("max-surge")
	o.batchPercentSet = cmd.Flags().Changed("batch-percent")
	o.batchCountSet = cmd.Flags().Changed("batch-node-count")
	if !o.seedSet {
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
	switch o.Strategy {
	case plan.StrategySurge:
		if _, err := plan.ParseSurge(o.MaxSurge, o.MaxUnavailable); err != nil {
			return err
		}
	case plan.StrategyShortLived:
		if o.maxSurgeSet {
			return usageErrorf("--max-surge needs --strategy surge")
		}
	case plan.StrategyBlueGreen, plan.StrategyAutoscaled:
		if o.maxSurgeSet {
			return usageErrorf("--max-surge needs --strategy surge")
		}
		if o.batchPercentSet && o.batchCountSet {
			return usageErrorf("--batch-node-count and --batch-percent cannot be used together")
		}
		if o.BlueGreen.BatchNodes < 0 {
			return usageErrorf("invalid --batch-node-count %d: must not be negative", o.BlueGreen.BatchNodes)
		}
		if err := plan.ValidateBlueGreen(o.blueGreenInput()); err != nil {
			return err
		}
	case plan.StrategyEKS:
		if o.maxSurgeSet {
			return usageErrorf("--max-surge needs --strategy surge")
		}
		if _, err := plan.ParseMaxUnavailable(o.MaxUnavailable, 1); err != nil {
			return err
		}
	default:
		return usageErrorf("invalid --strategy %q: must be one of %s", o.Strategy, strings.Join(plan.Strategies, ", "))
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
	switch o.Provider {
	case "", providerNone, providerAWS:
	default:
		return usageErrorf("invalid --provider %q: must be aws or none", o.Provider)
	}
	if err := o.validateAWS(); err != nil {
		return err
	}
	if o.Provider == providerNone && len(o.TargetLabels) == 0 {
		return usageErrorf("no target given: use --target-label key=value for the labels up-to-date nodes carry (e.g. eks.amazonaws.com/nodegroup-image=ami-0abc)")
	}
	if err := output.ValidateFormat(o.Output); err != nil {
		return &usageError{err: err}
	}
	return nil
}

// blueGreenInput is the blue/green settings of the flags.
func (o *PlanOptions) blueGreenInput() plan.BlueGreenInput {
	in := o.BlueGreen
	if o.batchPercentSet {
		in.BatchNodes = -1 // the percentage decides
	} else {
		in.BatchPercent = 0
	}
	return in
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
func (o *PlanOptions) input(snap plan.Snapshot) (plan.Input, error) {
	in := plan.Input{
		Context:        o.context,
		NodeGroup:      o.NodeGroup,
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
		BlueGreen:      o.blueGreenInput(),
	}
	if o.Selector == "" {
		key, err := plan.ResolveNodeGroupLabel(snap.Nodes, o.NodeGroup, o.NodeGroupLabel)
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
	snap, err := plan.TakeSnapshot(ctx, o.client)
	if err != nil {
		return nil, err
	}
	in, err := o.input(snap)
	if err != nil {
		return nil, err
	}
	nodes, err := plan.GroupNodes(snap.Nodes, in)
	if err != nil {
		return nil, err
	}
	in.Provider = o.resolveProvider(nodes)
	if in.Provider == providerAWS {
		if in.Cloud, err = o.awsGroup(ctx, nodes); err != nil {
			return nil, err
		}
	} else if o.Strategy == plan.StrategySurge && o.MaxSurge > 0 {
		return nil, usageErrorf("--max-surge %d needs a provider that creates nodes (--provider aws); with --provider none use --max-surge 0 and --max-unavailable N", o.MaxSurge)
	} else if len(o.targetLabels) == 0 {
		return nil, usageErrorf("no target given: use --target-label key=value for the labels up-to-date nodes carry (e.g. eks.amazonaws.com/nodegroup-image=ami-0abc), or --provider aws")
	}
	return plan.Build(snap, in)
}

func (o *PlanOptions) printPlan(p *plan.Plan) error {
	if o.Output != output.FormatTable {
		return output.Print(o.Out, o.Output, p)
	}
	return plan.WriteTable(o.Out, p, time.Now(), output.Colorizer(output.ColorEnabled(o.Out)))
}

// Run prints the plan.
func (o *PlanOptions) Run(ctx context.Context) error {
	p, err := o.buildPlan(ctx)
	if err != nil {
		return err
	}
	return o.printPlan(p)
}
