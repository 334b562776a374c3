package plugin

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/metadata"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/output"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// completionTimeout bounds the cluster calls of one TAB.
const completionTimeout = 5 * time.Second

var (
	nodesResource      = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	namespacesResource = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	configMapsResource = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

// completionSource is where completion finds names: the kubeconfig, and
// the cluster through metadata-only lists (names and labels, no specs or
// statuses: a few hundred bytes a node on a 5,000-node cluster).
type completionSource interface {
	Kubeconfig() (clientcmdapi.Config, error)
	Metadata() (metadata.Interface, error)
}

// clusterSource reads the kubeconfig and cluster the connection flags name.
type clusterSource struct {
	configFlags *genericclioptions.ConfigFlags
}

func (s *clusterSource) Kubeconfig() (clientcmdapi.Config, error) {
	return s.configFlags.ToRawKubeConfigLoader().RawConfig()
}

func (s *clusterSource) Metadata() (metadata.Interface, error) {
	cfg, err := s.configFlags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = completionTimeout
	}
	return metadata.NewForConfig(cfg)
}

// strategyHelp describes --strategy values in the completion menu: each
// strategy's own help.
func strategyHelp() map[string]string {
	out := map[string]string{}
	for _, n := range plan.StrategyNames() {
		s, _ := plan.LookupStrategy(n)
		out[n], _, _ = strings.Cut(s.Help(), ";") // the first clause fits a menu
	}
	return out
}

// cloudFlagNames are the flags the clouds bind, whose values they
// complete (none needs a file name).
func cloudFlagNames() []string {
	owners := cloud.BoundFlags().Owners
	names := make([]string, 0, len(owners))
	for n := range owners {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// registerCompletions adds dynamic completion to the command tree once it
// is built: node groups for NODEGROUP, and the values of the flags found by
// name, so the commands' own files need not know about it.
func registerCompletions(root *cobra.Command, src completionSource) {
	reg := func(c *cobra.Command, flag string, f cobra.CompletionFunc) {
		if c.Flag(flag) != nil {
			_ = c.RegisterFlagCompletionFunc(flag, f)
		}
	}
	// kubectl's connection flags live on the root, for every command.
	reg(root, "context", kubeconfigNames(src, func(c clientcmdapi.Config) map[string]string {
		out := map[string]string{}
		for name, ctx := range c.Contexts {
			out[name] = ctx.Cluster
		}
		return out
	}))
	reg(root, "cluster", kubeconfigNames(src, func(c clientcmdapi.Config) map[string]string {
		out := map[string]string{}
		for name, cl := range c.Clusters {
			out[name] = cl.Server
		}
		return out
	}))
	reg(root, "user", kubeconfigNames(src, func(c clientcmdapi.Config) map[string]string {
		out := map[string]string{}
		for name := range c.AuthInfos {
			out[name] = ""
		}
		return out
	}))
	reg(root, "namespace", namespaceNames(src))

	walk(root, func(c *cobra.Command) {
		if c == root {
			noFilesUnlessFile(c)
			return
		}
		defer noFilesUnlessFile(c)
		registerCommandCompletions(c, src, reg)
	})
}

// fileFlags take a file name, or a command that may be one: the shell
// completes them with file names.
var fileFlags = []string{"kubeconfig", "plan-file", "certificate-authority", "client-certificate", "client-key", "cache-dir",
	"pre-drain-hook", "post-drain-hook", "pre-terminate-hook"}

// noFilesUnlessFile makes every flag of c that takes a value, has no
// completion of its own and takes no file complete nothing, instead of
// cobra's file names ("--ami <TAB>" listed the directory).
func noFilesUnlessFile(c *cobra.Command) {
	visit := func(f *pflag.Flag) {
		if f.Value.Type() == "bool" || slices.Contains(fileFlags, f.Name) {
			return
		}
		if _, ok := c.GetFlagCompletionFunc(f.Name); !ok {
			_ = c.RegisterFlagCompletionFunc(f.Name, cobra.NoFileCompletions)
		}
	}
	c.PersistentFlags().VisitAll(visit)
	c.Flags().VisitAll(visit)
}

// registerCommandCompletions completes a subcommand's arguments and the
// values of its flags.
func registerCommandCompletions(c *cobra.Command, src completionSource, reg func(*cobra.Command, string, cobra.CompletionFunc)) {
	switch c.Name() {
	case "plan", "run", "check", "abort":
		c.ValidArgsFunction = nodeGroupNames(src)
	case "status", "report", "cancel", "resume", "rollback", "complete":
		c.ValidArgsFunction = recordedGroupNames(src)
	default:
		c.ValidArgsFunction = cobra.NoFileCompletions
	}
	reg(c, "strategy", fixedValues(plan.StrategyNames(), strategyHelp()))
	reg(c, "provider", fixedValues(cloud.Names(), cloud.ProviderHelp()))
	for _, flag := range cloudFlagNames() {
		reg(c, flag, fixedValues(cloud.ValuesOf(flag), nil))
	}
	reg(c, "order", fixedValues([]string{plan.OrderZoneBalanced, plan.OrderRandom}, nil))
	checkHelp := map[string]string{}
	for _, n := range check.Names() {
		sev, _ := check.SeverityOf(n)
		checkHelp[n] = string(sev)
	}
	reg(c, "ignore-check", fixedValues(check.Names(), checkHelp))
	reg(c, "nodegroup-label", fixedValues(cloud.NodeGroupLabels(), nil))
	reg(c, "state-namespace", namespaceNames(src))
	reg(c, "output", outputFormats(c.Name()))
}

// fixedValues completes one of values, with a description where help has one.
func fixedValues(values []string, help map[string]string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		var out []string
		for _, v := range values {
			if strings.HasPrefix(v, toComplete) {
				out = append(out, withHelp(v, help[v]))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// outputFormats completes -o: status, plan and run also print -o wide,
// version and report no -o name. A template format is completed up to its "=",
// without the space after it.
func outputFormats(command string) cobra.CompletionFunc {
	formats := output.Formats(command == "status" || command == "plan" || command == "run")
	if command == "version" || command == "report" {
		formats = slices.DeleteFunc(formats, func(f string) bool { return f == output.FormatName })
	}
	return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		var out []string
		onlyTemplates := true
		for _, f := range formats {
			if strings.HasPrefix(f, toComplete) {
				out = append(out, f)
				onlyTemplates = onlyTemplates && strings.HasSuffix(f, "=")
			}
		}
		dir := cobra.ShellCompDirectiveNoFileComp
		if len(out) > 0 && onlyTemplates {
			dir |= cobra.ShellCompDirectiveNoSpace
		}
		return out, dir
	}
}

// kubeconfigNames completes the names of one kind of kubeconfig entry,
// described by what pick returns for each (cluster of a context, server
// of a cluster).
func kubeconfigNames(src completionSource, pick func(clientcmdapi.Config) map[string]string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		cfg, err := src.Kubeconfig()
		if err != nil {
			cobra.CompErrorln("cannot read the kubeconfig: " + err.Error())
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		entries := pick(cfg)
		var out []string
		for name, help := range entries {
			if strings.HasPrefix(name, toComplete) {
				out = append(out, withHelp(name, help))
			}
		}
		sort.Strings(out)
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// namespaceNames completes the cluster's namespaces.
func namespaceNames(src completionSource) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		list, err := listMetadata(cmd, src, namespacesResource, "", metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return compError(err)
		}
		var out []string
		for _, ns := range list.Items {
			if strings.HasPrefix(ns.Name, toComplete) {
				out = append(out, ns.Name)
			}
		}
		sort.Strings(out)
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// nodeGroupNames completes NODEGROUP of plan, run and check from one
// metadata-only list of the nodes: the values of --nodegroup-label, or of
// the well-known node-group labels the planner detects.
func nodeGroupNames(src completionSource) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 || flagValue(cmd, "selector") != "" {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		// ResourceVersion 0 lets the API server answer from its cache.
		list, err := listMetadata(cmd, src, nodesResource, "", metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return compError(err)
		}
		var out []string
		for _, g := range nodeGroupsOf(list.Items, flagValue(cmd, "nodegroup-label")) {
			if strings.HasPrefix(g.name, toComplete) {
				out = append(out, withHelp(g.name, fmt.Sprintf("%d nodes, %s", g.nodes, g.label)))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// nodeGroup is one completion candidate for NODEGROUP.
type nodeGroup struct {
	name, label string
	nodes       int
}

// nodeGroupsOf groups nodes by the value of key, or, without one, of the
// first of cloud.NodeGroupLabels() each node carries; by name.
func nodeGroupsOf(nodes []metav1.PartialObjectMetadata, key string) []nodeGroup {
	keys := cloud.NodeGroupLabels()
	if key != "" {
		keys = []string{key}
	}
	index := map[string]int{}
	var groups []nodeGroup
	for i := range nodes {
		for _, k := range keys {
			v := nodes[i].Labels[k]
			if v == "" {
				continue
			}
			j, ok := index[v]
			if !ok {
				j = len(groups)
				index[v] = j
				groups = append(groups, nodeGroup{name: v, label: k})
			}
			groups[j].nodes++
			break
		}
	}
	slices.SortFunc(groups, func(a, b nodeGroup) int { return strings.Compare(a.name, b.name) })
	return groups
}

// recordedGroupNames completes NODEGROUP of status and the run controls:
// the groups with a record in --state-namespace.
func recordedGroupNames(src completionSource) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ns := flagValue(cmd, "state-namespace")
		if ns == "" {
			ns = state.DefaultNamespace
		}
		// The label value is state's unexported managedBy.
		list, err := listMetadata(cmd, src, configMapsResource, ns, metav1.ListOptions{LabelSelector: state.ManagedByLabel + "=kubectl-nodeupgrade"})
		if err != nil {
			return compError(err)
		}
		var out []string
		for _, cm := range list.Items {
			if g := cm.Annotations[state.GroupAnnotation]; g != "" && !strings.HasPrefix(g, "-l ") && strings.HasPrefix(g, toComplete) {
				out = append(out, g)
			}
		}
		sort.Strings(out)
		return slices.Compact(out), cobra.ShellCompDirectiveNoFileComp
	}
}

func flagValue(cmd *cobra.Command, name string) string {
	if f := cmd.Flags().Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

func withHelp(value, help string) string {
	if help == "" {
		return value
	}
	return value + "\t" + help
}

// listMetadata lists resource in namespace ns ("" for all, or a
// cluster-scoped resource), its objects' metadata only, within the
// completion's time.
func listMetadata(cmd *cobra.Command, src completionSource, resource schema.GroupVersionResource, ns string, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	ctx, cancel := completionContext(cmd)
	defer cancel()
	client, err := src.Metadata()
	if err != nil {
		return nil, err
	}
	return client.Resource(resource).Namespace(ns).List(ctx, opts)
}

func completionContext(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	return context.WithTimeout(ctx, completionTimeout)
}

// compError reports a failed lookup on the completion's debug channel (the
// shell shows nothing) and offers no files instead.
func compError(err error) ([]string, cobra.ShellCompDirective) {
	cobra.CompErrorln(err.Error())
	return nil, cobra.ShellCompDirectiveNoFileComp
}
