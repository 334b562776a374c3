package plugin

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/fleet"
)

// FleetExportOptions are the flags of "fleet export".
type FleetExportOptions struct {
	fleetOptions
	Argo bool
	argo fleet.ArgoOptions
}

func newCmdFleetExport(base fleetOptions) *cobra.Command {
	o := &FleetExportOptions{fleetOptions: base}
	cmd := fleetFileCommand("export", [3]string{"Write a fleet as an Argo Workflows WorkflowTemplate", `Write the fleet of -f as an Argo Workflows WorkflowTemplate, for teams that
schedule with Argo: a step group per stage (its targets at most maxConcurrency
at once, failing fast), each target a container running "kubectl-nodeupgrade
run" in its context with the fleet's kubeconfig from --kubeconfig-secret, a
suspend step for each soak and each approval ("argo resume" approves). What
Argo cannot do as the fleet does (after-stage gates, maxFailures above 0) is
listed in the template's annotation nodeupgrade.dev/not-mapped. See
docs/fleet-argo.md.`, `  # The fleet as a WorkflowTemplate
  kubectl nodeupgrade fleet export -f fleet.yaml --argo --image-ref ghcr.io/nodeupgrade/kubectl-nodeupgrade:v1.0.0 --kubeconfig-secret fleet-kubeconfig`}, o)
	f := cmd.Flags()
	f.BoolVar(&o.Argo, "argo", false, "Write an Argo Workflows WorkflowTemplate (the one format so far; required)")
	f.StringVar(&o.argo.Image, "image-ref", "", "The plugin's image each target's container runs (default "+ImageRepository+":<this version>)")
	f.StringVar(&o.argo.KubeconfigSecret, "kubeconfig-secret", "", "The Secret, in the workflow's namespace, holding the fleet's kubeconfig (every target's context) under key \"config\"")
	f.StringVar(&o.argo.ServiceAccount, "service-account", "", "The ServiceAccount of the workflow's pods (default: Argo's)")
	return cmd
}

// Complete reads the fleet file.
func (o *FleetExportOptions) Complete(*cobra.Command, []string) error {
	if o.argo.Image == "" && version() != "dev" {
		o.argo.Image = ImageRepository + ":" + version()
	}
	return o.load()
}

// Validate checks the format and the Argo options.
func (o *FleetExportOptions) Validate() error {
	if !o.Argo {
		return usageErrorf("missing --argo: the one format fleet export writes")
	}
	if err := o.argo.Validate(); err != nil {
		return usageErrorf("%v", err)
	}
	return nil
}

// Run writes the template.
func (o *FleetExportOptions) Run(context.Context) error {
	out, err := fleet.ArgoWorkflowTemplate(o.fleet, o.argo)
	if err != nil {
		return usageErrorf("%v", err)
	}
	_, err = o.Out.Write(out)
	return err
}
