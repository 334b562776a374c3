package plugin

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/output"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// CheckReport is what "check -o json|yaml" prints.
type CheckReport struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	NodeGroup  string          `json:"nodeGroup,omitempty"`
	Selector   string          `json:"selector,omitempty"`
	Namespace  string          `json:"namespace,omitempty"`
	Outdated   []string        `json:"outdatedNodes"`
	Blockers   int             `json:"blockers"`
	Warnings   int             `json:"warnings"`
	Findings   []check.Finding `json:"findings"`
}

// ResourceRefs lists the audited nodes for -o name: node/NAME lines.
func (r CheckReport) ResourceRefs() []output.ResourceRef {
	refs := make([]output.ResourceRef, 0, len(r.Outdated))
	for _, n := range r.Outdated {
		refs = append(refs, output.ResourceRef{Kind: "Node", Name: n})
	}
	return refs
}

// CheckOptions are the flags of "check": the plan's, plus the namespace scope.
type CheckOptions struct {
	PlanOptions
	AllNamespaces bool
}

const checkExample = `  # Audit every workload on the outdated nodes of node group "demo"
  kubectl nodeupgrade check demo --target-label eks.amazonaws.com/nodegroup-image=ami-new

  # Only one namespace, as JSON; exit 5 when a blocker is found
  kubectl nodeupgrade check demo --target-label eks.amazonaws.com/nodegroup-image=ami-new -n demo -o json`

// NewCmdCheck builds "check": the workload disruption audit.
func NewCmdCheck(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	cmd, _ := newCmdCheck(configFlags, streams)
	return cmd
}

func newCmdCheck(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) (*cobra.Command, *CheckOptions) {
	o := &CheckOptions{PlanOptions: PlanOptions{configFlags: configFlags, IOStreams: streams}}
	cmd := &cobra.Command{
		Use:   "check NODEGROUP",
		Short: "Audit the workloads on a node group's outdated nodes for what would block the drain or drop traffic",
		Long: `Audit every workload with pods on the node group's outdated nodes, in the
batches the plan would use, and report with a one-line fix:

Blockers (run refuses to start; --ignore-check NAME or --force overrides):
  ` + strings.Join(namesOf(check.Blocker), ", ") + `
Warnings:
  ` + strings.Join(namesOf(check.Warning), ", ") + `
  (` + check.CheckEmptyDirData + ` is a blocker unless --delete-emptydir-data is given, and
  ` + check.CheckBarePod + ` a warning with --force)

All namespaces are audited unless -n/--namespace is given. Exit code 0 when
no blocker is found, 5 when one is.`,
		Example: checkExample,
		Args:    argsAtMost(1, "one NODEGROUP"),
		RunE:    runE(o),
	}
	o.AddFlags(cmd)
	cmd.Flags().Lookup("output").Usage = "Output format: json, yaml, name (the outdated nodes), jsonpath=... or go-template=... (default: a table)"
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "Audit all namespaces (the default unless -n/--namespace is given)")
	return cmd, o
}

func namesOf(s check.Severity) []string {
	var out []string
	for _, n := range check.Names() {
		if sev, _ := check.SeverityOf(n); sev == s {
			out = append(out, n)
		}
	}
	return out
}

// Validate refuses a check without a target before the cluster is read:
// with none, no node is outdated and an audit of nothing would pass a CI
// gate silently.
func (o *CheckOptions) Validate() error {
	if err := o.PlanOptions.Validate(); err != nil {
		return err
	}
	// check's findings table has no wide form.
	if err := output.ValidateFormat(o.Output); err != nil {
		return &usageError{err: err}
	}
	if len(o.TargetLabels) == 0 && !o.Bound.TargetGiven(o.Cloud) {
		return usageErrorf("no target given: check audits the nodes that are not on the target; use --target-label key=value (the labels up-to-date nodes carry), or %s", o.TargetFlags())
	}
	return nil
}

// Run audits and prints the findings; blockers make it exit 5.
func (o *CheckOptions) Run(ctx context.Context) error {
	if !o.AllNamespaces && o.configFlags.Namespace != nil {
		o.Namespace = *o.configFlags.Namespace
	}
	p, err := o.planOf(ctx)
	if err != nil {
		return err
	}
	report := CheckReport{
		APIVersion: plan.APIVersion,
		Kind:       "CheckReport",
		NodeGroup:  p.NodeGroup,
		Selector:   p.Selector,
		Namespace:  o.Namespace,
		Outdated:   p.OutdatedNames(),
		Findings:   p.Findings,
	}
	if report.Outdated == nil {
		report.Outdated = []string{}
	}
	report.Blockers = len(p.Blockers())
	report.Warnings = len(p.Findings) - report.Blockers
	if o.Output != output.FormatTable {
		err = output.Print(o.Out, o.Output, report)
	} else if len(report.Outdated) == 0 {
		_, err = fmt.Fprintf(o.Out, "No outdated nodes: every node of the group is on the target; nothing to audit.\n")
	} else if len(p.Findings) == 0 {
		what := fmt.Sprintf("the %d outdated nodes", len(report.Outdated))
		if len(report.Outdated) == 1 {
			what = "the outdated node"
		}
		_, err = fmt.Fprintf(o.Out, "No findings for %s.\n", what)
	} else {
		err = plan.WriteFindings(o.Out, p.Findings, output.Colorizer(output.ColorEnabled(o.Out)))
	}
	if err != nil {
		return err
	}
	if report.Blockers > 0 {
		found := &blockersFound{n: report.Blockers}
		for _, f := range p.Blockers() {
			if !slices.Contains(found.checks, f.Check) {
				found.checks = append(found.checks, f.Check)
			}
		}
		return found
	}
	return nil
}

// blockersFound makes check exit 5 so scripts can gate on it; checks are
// the names of the checks that found them.
type blockersFound struct {
	n      int
	checks []string
}

func (e *blockersFound) Error() string {
	// A node protected from Karpenter's disruption yields only to the
	// annotation's removal: no flag to name.
	ignorable := slices.DeleteFunc(slices.Clone(e.checks), func(c string) bool { return c == check.CheckNodeDoNotDisrupt })
	override := ", or use run --ignore-check " + strings.Join(ignorable, " --ignore-check ")
	switch {
	case slices.Contains(e.checks, check.CheckMachineLeftRunning):
		override = ", or use the flags the findings name"
	case len(ignorable) == 0:
		override = ""
	}
	if e.n == 1 {
		return "1 blocker found; fix it before running" + override
	}
	return fmt.Sprintf("%d blockers found; fix them before running%s", e.n, override)
}
