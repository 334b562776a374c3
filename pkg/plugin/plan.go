package plugin

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/internal/session"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/output"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// PlanOptions are the flags shared by plan and run: what to upgrade and how.
type PlanOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams

	// Request is what the flags ask for, typed and validated by the
	// session; a run records it.
	session.Request
	Output         string
	StateNamespace string

	client  kubernetes.Interface
	context string
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
var runOnlyFlags = []string{"yes", "dry-run", "no-wait", "drain-timeout", "node-ready-timeout", "ignore-check", "max-age",
	"in-cluster", "image-ref", "service-account", session.JobFlag, session.RollbackFlag}

// AddFlags registers the planning flags.
func (o *PlanOptions) AddFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	r := &o.Request.Request
	f.StringVar(&r.NodeGroupLabel, "nodegroup-label", "", "Label key whose value is the node group name (default: detected among "+fmt.Sprint(cloud.NodeGroupLabels())+")")
	f.StringVarP(&r.Selector, "selector", "l", "", "Select the group's nodes by this label selector instead of NODEGROUP")
	f.StringArrayVar(&r.TargetLabels, "target-label", nil, "A label key=value that up-to-date nodes carry (repeatable); nodes lacking any are outdated")
	f.StringVar(&r.Strategy, "strategy", string(plan.DefaultStrategy), plan.StrategyHelp())
	f.IntVar(&r.MaxSurge, "max-surge", 1, "With --strategy surge: extra nodes per zone while its nodes are replaced (surge + unavailable at most 20)")
	f.IntVar(&r.BlueGreen.BatchNodes, "batch-node-count", 1, "With --strategy blue-green: blue nodes drained per batch; 0 drains none and goes straight to the soak")
	f.Float64Var(&r.BlueGreen.BatchPercent, "batch-percent", 0, "With --strategy blue-green: the batch as a fraction of blue (above 0, at most 1; rounded down, at least 1 node), instead of --batch-node-count")
	durationVar(f, &r.BlueGreen.BatchSoak, "batch-soak", 0, "With --strategy blue-green: wait between drained batches")
	durationVar(f, &r.BlueGreen.NodePoolSoak, "node-pool-soak", time.Hour, "With --strategy blue-green: wait after the last batch before blue is deleted (all soaks at most 7 days); \"complete\" ends it early")
	durationVar(f, &r.BlueGreen.KeepBlue, "keep-blue", 0, "With --strategy blue-green: keep blue scaled to 0 nodes this long after the run instead of deleting it (at most 7 days), so \"rollback\" scales it back up and drains green; the next run after that deletes it")
	durationVar(f, &r.BlueGreen.WaitPeriod, "wait-period", 72*time.Hour, "With --strategy autoscaled-blue-green: how long the cluster autoscaler may remove under-used blue nodes before the rest is drained (0 to 7 days)")
	f.StringVar(&r.BlueGreen.GreenSelector, "green-selector", "", "With --strategy blue-green: the green nodes are those this label selector selects (made by someone else, not an Auto Scaling group: neither scaled nor deleted)")
	f.StringVar(&r.MaxUnavailable, "max-unavailable", "1", "Nodes drained at once: 1 to 100, or a percentage of the group such as 25%; with --strategy surge, per zone, default 0")
	f.StringVar(&r.Taint, "taint", "", "Taint put on outdated nodes (default <nodegroup-label>=unschedulable:NoSchedule)")
	f.Int64Var(&r.Seed, "seed", 0, "Seed of the random batch order; the same seed gives plan and run the same batches (default: random, shown in the plan)")
	f.StringVar(&r.Order, "order", "", "Batch order: zone-balanced (nodes from as few zones as possible, PDB budgets kept where a choice allows) or random (default: zone-balanced when the group spans several zones)")
	f.StringVar(&r.Provider, "provider", "", providerUsage())
	o.Bound = cloud.BindFlags(f, r)
	f.StringVar(&o.StateNamespace, "state-namespace", state.DefaultNamespace, "Namespace of the run's record (a ConfigMap) and lock (a Lease), one of each per node group")
	f.BoolVar(&r.Force, "force", false, "Delete pods that no controller manages, and pods still running at the drain timeout")
	f.BoolVar(&r.DeleteEmptyDirData, "delete-emptydir-data", false, "Evict pods using emptyDir volumes (their data is lost)")
	f.BoolVar(&r.MakeRoom, "make-room", false, "Before each batch drains, scale up the Deployments it would take below their Ready count or past their PodDisruptionBudget (their HPA's bounds where one scales them), wait for the extra pods, and scale them back after; see docs/make-room.md")
	f.StringVar(&r.PriceFile, "price-file", "", "YAML or JSON file of instance prices (readAt: DATE, currency: USD, prices: {INSTANCE-TYPE: {REGION: PRICE-PER-HOUR}}) by which the plan prices the nodes eks, surge and blue/green add; without a price: \"not priced\"; see docs/check.md")
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
	o.Given = givenFlags(cmd)
	s, err := plan.LookupStrategy(o.Strategy)
	if err != nil {
		return err
	}
	if !o.Given["max-unavailable"] {
		o.MaxUnavailable = s.Traits().DefaultMaxUnavailable
	}
	if o.Given["batch-percent"] {
		o.BlueGreen.BatchNodes = -1 // the percentage decides
	} else {
		o.BlueGreen.BatchPercent = 0
	}
	if !o.Given["seed"] {
		o.Seed = rand.Int64N(1_000_000)
	}
	return nil
}

// Validate checks every flag before the cluster is touched.
func (o *PlanOptions) Validate() error {
	if err := o.Request.Validate(); err != nil {
		return err
	}
	if err := output.ValidateTableFormat(o.Output); err != nil {
		return &usageError{err: err}
	}
	if o.PriceFile != "" {
		prices, err := plan.ReadPriceFile(o.PriceFile)
		if err != nil {
			return err
		}
		o.Prices = prices
	}
	return nil
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

// connectClient sets *client, unless a test set it, to the client the
// kubectl connection flags make.
func connectClient(configFlags *genericclioptions.ConfigFlags, client *kubernetes.Interface) error {
	po := &PlanOptions{configFlags: configFlags, client: *client}
	if err := po.connect(); err != nil {
		return err
	}
	*client = po.client
	return nil
}

// session is the command's session over the connection connect made.
func (o *PlanOptions) session() *session.Session {
	return newSession(o.configFlags, o.client, o.context, o.IOStreams, o.StateNamespace)
}

// planPrinter prints a plan to out as format asks (a table where "").
func planPrinter(out io.Writer, format string) func(*plan.Plan) error {
	return func(p *plan.Plan) error {
		if !output.IsTable(format) {
			return output.Print(out, format, p)
		}
		return plan.WriteTable(out, p, time.Now(), output.Colorizer(output.ColorEnabled(out)), format == output.FormatWide)
	}
}

// planOf plans the validated request over the connection.
func (o *PlanOptions) planOf(ctx context.Context) (*plan.Plan, error) {
	if err := o.connect(); err != nil {
		return nil, err
	}
	pl, err := o.session().Plan(ctx, &o.Request)
	if err != nil {
		return nil, err
	}
	return pl.Plan, nil
}
