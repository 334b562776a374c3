package session

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// validateProvider checks --provider and the cloud flags without calling
// the cloud.
func (r *Request) validateProvider() error {
	switch _, known := cloud.Lookup(r.Provider); {
	case known:
		if err := r.refuseCloudFlags(r.Provider); err != nil {
			return err
		}
	case r.Provider == "":
	case r.Provider == cloud.NoneName:
		return r.refuseCloudFlags(cloud.NoneName)
	default:
		return Usagef("invalid --provider %q: must be one of %s", r.Provider, strings.Join(cloud.Names(), ", "))
	}
	c, err := r.cloudFor(nil)
	if err != nil || c == nil {
		return err
	}
	return c.Validate(r.Cloud)
}

// refuseCloudFlags refuses a cloud flag that provider does not take: it
// would be silently ignored.
func (r *Request) refuseCloudFlags(provider string) error {
	if r.Bound == nil {
		return nil
	}
	for _, name := range sortedKeys(r.Given) {
		if takers, ok := r.Bound.Owners[name]; ok && !slices.Contains(takers, provider) {
			return Usagef("--%s needs --provider %s, not --provider %s", name, strings.Join(takers, " or "), provider)
		}
	}
	return nil
}

// cloudFor is the cloud that serves the request: the one --provider names,
// the only one that takes every cloud flag given, or the one that owns
// every node (nil: provider none).
func (r *Request) cloudFor(nodes []corev1.Node) (cloud.Cloud, error) {
	name := r.Provider
	if err := refuseExclusiveNodes(name, nodes); err != nil {
		return nil, err
	}
	if name == "" && r.Cloud.Given() {
		if takers := r.cloudsTakingGivenFlags(); len(takers) == 1 {
			name = takers[0]
			if err := r.refuseAnotherCloudsFlags(name, nodes); err != nil {
				return nil, err
			}
		}
	}
	if name == "" {
		if nodes == nil {
			return nil, nil // not known before the nodes are listed
		}
		// The nodes decide; the cloud flags given must be the cloud's.
		name = cloud.Detect(nodes)
		if err := r.refuseCloudFlags(name); err != nil {
			return nil, err
		}
	}
	c, _ := cloud.Lookup(name)
	return c, nil
}

// refuseExclusiveNodes refuses --provider NAME, a cloud, on nodes that an
// Exclusive cloud (Karpenter) serves, every one: NAME's cloud would fail
// on what it lacks (an AWS region) instead of naming the one to use.
func refuseExclusiveNodes(name string, nodes []corev1.Node) error {
	owner := cloud.Detect(nodes)
	c, _ := cloud.Lookup(owner)
	if _, exclusive := c.(cloud.Exclusive); !exclusive || name == "" || name == owner || name == cloud.NoneName {
		return nil
	}
	return Usagef("cannot use --provider %s on these nodes: provider %s serves them, whose controller replaces them itself; use --provider %s", name, owner, owner)
}

// refuseAnotherCloudsFlags refuses cloud flags that pick name when the
// nodes are another cloud's: opened, name's cloud would fail on what it
// lacks (an AWS region for gce:// nodes) or point to its own flags.
func (r *Request) refuseAnotherCloudsFlags(name string, nodes []corev1.Node) error {
	owner := cloud.Detect(nodes)
	if _, known := cloud.Lookup(owner); nodes == nil || !known || owner == name || r.Bound == nil {
		return nil
	}
	var theirs []string
	for _, flag := range sortedKeys(r.Given) {
		if takers := r.Bound.Owners[flag]; slices.Contains(takers, name) && !slices.Contains(takers, owner) {
			theirs = append(theirs, "--"+flag)
		}
	}
	return Usagef("cannot use %s (of --provider %s) on the nodes of provider %s: name the target with %s",
		strings.Join(theirs, " and "), name, owner, OrList(prefixed("--", r.Bound.Targets[owner])))
}

// cloudsTakingGivenFlags are the clouds that take every cloud flag given.
func (r *Request) cloudsTakingGivenFlags() []string {
	names := CloudNames()
	if r.Bound == nil {
		return names
	}
	for flag, takers := range r.Bound.Owners {
		// A request from a record (resume, rollback) gave the options it holds.
		if r.Given[flag] || r.Given == nil && r.Cloud.Options[flag] != "" {
			names = slices.DeleteFunc(names, func(n string) bool { return !slices.Contains(takers, n) })
		}
	}
	return names
}

// CloudNames are the registered clouds, sorted: what --provider takes
// besides none.
func CloudNames() []string {
	return slices.DeleteFunc(cloud.Names(), func(n string) bool { return n == cloud.NoneName })
}

// TargetFlags says which flags name a target: those of --provider's
// cloud, else every cloud's, each with its --provider.
func (r *Request) TargetFlags() string {
	names := []string{r.Provider}
	if _, ok := cloud.Lookup(r.Provider); !ok {
		names = CloudNames()
	}
	var parts []string
	for _, name := range names {
		if flags := r.Bound.Targets[name]; len(flags) > 0 {
			parts = append(parts, OrList(prefixed("--", flags))+" with --provider "+name)
		}
	}
	return strings.Join(parts, "; ")
}

// GroupFlags are the flags that pick a provider's group: --provider, and
// the provider's own flag naming the group where it has one.
func (r *Request) GroupFlags(provider, group string) string {
	flags := "--provider " + provider
	if r.Bound != nil {
		if name := r.Bound.Group[provider]; name != "" {
			flags += fmt.Sprintf(" --%s %s", name, group)
		}
	}
	return flags
}

// defaultStrategy settles a request that left --strategy to its default
// where the group's service runs strategies of its own and the run cannot
// build the default (a GKE node pool): the group's own strategy, with its
// settings where no flag gives them, as the service's own upgrade would
// run; without one it is refused, naming those the service runs: planning
// would blame a --strategy never given.
func (r *Request) defaultStrategy(in *plan.Input) error {
	cg := in.Cloud
	if r.Given == nil || r.Given["strategy"] || r.strategy == nil || r.strategy.Name() != plan.DefaultStrategy ||
		cg == nil || cg.Managed == nil || cg.Managed.Runs(plan.DefaultStrategy) || cg.Can.Has(r.strategy.Needs(*in)) {
		return nil
	}
	if own := cg.Managed.Own; own != nil {
		return r.takeStrategy(in, *own)
	}
	var runs []string
	for _, name := range plan.StrategyNames() {
		if cg.Managed.Runs(plan.StrategyName(name)) {
			runs = append(runs, name)
		}
	}
	return Usagef("no --strategy given, and the default, %s, is not one the %s %q takes: use --strategy %s",
		plan.DefaultStrategy, cg.GroupKind, cg.Group, OrList(runs))
}

// takeStrategy makes the group's own strategy the request's, and its
// settings those of the flags not given (--max-unavailable, --max-surge); the request, and so the run's
// record, holds them.
func (r *Request) takeStrategy(in *plan.Input, own plan.GroupStrategy) error {
	s, err := plan.LookupStrategy(string(own.Strategy))
	if err != nil {
		return err
	}
	r.strategy, r.Request.Strategy = s, string(own.Strategy)
	if !r.Given["max-unavailable"] {
		r.MaxUnavailable = own.MaxUnavailable
	}
	if !r.Given["max-surge"] {
		r.MaxSurge = own.MaxSurge
	}
	r.BlueGreen = own.BlueGreen
	in.Strategy, in.StrategyFrom = own.Strategy, own.From
	in.MaxUnavailable, in.MaxSurge, in.BlueGreen = r.MaxUnavailable, r.MaxSurge, r.BlueGreen
	return nil
}

// refuseNoTarget refuses a plan without a cloud that has no target labels
// either: nothing would tell an outdated node from an up-to-date one.
func (r *Request) refuseNoTarget(in plan.Input) error {
	if len(r.targetLabels) == 0 && plan.CapRemoveNodes.Has(r.strategy.Needs(in)) {
		return Usagef("no target given: use --target-label key=value for the labels up-to-date nodes carry (e.g. eks.amazonaws.com/nodegroup-image=ami-0abc), or the --provider of the cloud whose group keeps the nodes (%s)", OrList(CloudNames()))
	}
	return nil
}

// prefixed puts prefix before each of names.
func prefixed(prefix string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + n
	}
	return out
}

// OrList is "a", "a or b", "a, b or c".
func OrList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}
