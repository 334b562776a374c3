package plugin

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/prices"
)

// PricesFetchOptions are the flags of "prices fetch".
type PricesFetchOptions struct {
	genericiooptions.IOStreams
	Cloud, Region, OutFile, APIKey string
}

// gcpAPIKeyEnv is where --api-key's default is read from, so that the key
// stays out of the shell's history.
const gcpAPIKeyEnv = "NODEUPGRADE_GCP_API_KEY"

// NewCmdPrices groups the commands on instance prices.
func NewCmdPrices(streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "prices",
		Short: "Write the price file by which plan prices the nodes a run adds",
		Long: `Write the --price-file of plan and run (readAt, currency, prices: instance type →
region → price per hour) from a cloud's published on-demand Linux prices. It
needs the network, not the cluster: run it on a connected machine and hand the
file to the plans. See docs/check.md.`,
		Args: unknownCommand,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newCmdPricesFetch(streams))
	return cmd
}

func newCmdPricesFetch(streams genericiooptions.IOStreams) *cobra.Command {
	o := &PricesFetchOptions{IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "fetch --cloud aws|gcp|azure --region REGION [-o FILE]",
		Short: "Read a region's on-demand prices into a --price-file",
		Long: `Read a region's on-demand Linux prices per hour of every instance type and write
them as a --price-file dated today: AWS from its Price List bulk file of EC2
(Linux, shared tenancy, no pre-installed software), Azure from the Retail
Prices API (Consumption, not Spot or Low Priority), both without credentials;
GCP from the Cloud Billing Catalog API with an API key (--api-key, or
` + gcpAPIKeyEnv + `), each predefined machine type of the E2, N2, N2D, N1 and
C2 series priced as its vCPUs × the series' core price + its memory × the
RAM price. Nothing else is guessed: a type it does not write is "not priced"
in the plan.`,
		Args: argsAtMost(0, "no arguments"),
		RunE: runE(o),
	}
	f := cmd.Flags()
	f.StringVar(&o.Cloud, "cloud", "", "The cloud whose prices are read: "+strings.Join(prices.Clouds, ", "))
	f.StringVar(&o.Region, "region", "", "The region, as the cloud names it (us-east-1, westeurope, us-central1)")
	f.StringVarP(&o.OutFile, "output", "o", "", "The file to write (default: standard output)")
	f.StringVar(&o.APIKey, "api-key", "", "GCP: the Cloud Billing API key (default: $"+gcpAPIKeyEnv+")")
	return cmd
}

// Complete reads --api-key's default from the environment.
func (o *PricesFetchOptions) Complete(*cobra.Command, []string) error {
	if o.APIKey == "" {
		o.APIKey = os.Getenv(gcpAPIKeyEnv)
	}
	return nil
}

// Validate checks the flags before anything is fetched.
func (o *PricesFetchOptions) Validate() error {
	switch {
	case !slices.Contains(prices.Clouds, o.Cloud):
		return usageErrorf("invalid --cloud %q: want one of %s", o.Cloud, strings.Join(prices.Clouds, ", "))
	case o.Region == "":
		return usageErrorf("--region is required: the region whose prices are read")
	case o.Cloud == prices.GCP && o.APIKey == "":
		return usageErrorf("--cloud gcp needs --api-key (or $%s): the Cloud Billing Catalog API takes an API key", gcpAPIKeyEnv)
	case o.Cloud != prices.GCP && o.APIKey != "":
		return usageErrorf("--api-key is GCP's: --cloud %s needs no credentials", o.Cloud)
	}
	return nil
}

// Run fetches the prices and writes the file.
func (o *PricesFetchOptions) Run(ctx context.Context) error {
	f, err := prices.Fetch(ctx, prices.Source{Cloud: o.Cloud, Region: o.Region, APIKey: o.APIKey})
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := prices.Write(&b, f); err != nil {
		return err
	}
	if o.OutFile == "" || o.OutFile == "-" {
		_, err := o.Out.Write(b.Bytes())
		return err
	}
	if err := os.WriteFile(o.OutFile, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("cannot write %q: %w", o.OutFile, err)
	}
	_, err = fmt.Fprintf(o.ErrOut, "wrote the %s prices of %d instance types in %s, read %s, to %s\n", o.Cloud, len(f.Prices), o.Region, f.ReadAt, o.OutFile)
	return err
}
