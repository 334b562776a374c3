// Package conformance is the provider conformance suite: what a cloud
// provider package runs against its fake to prove it keeps the provider
// contract (package cloud), the way CSI drivers run csi-sanity or
// Karpenter's cloud providers its cloudprovider tests. The provider's test
// gives a Harness: how to stand its fake up with a group of outdated
// nodes, and the flags that name the target. The suite opens the provider
// as a plan does (cloud.OpenGroup), reads which capability interfaces it
// declares (cloud.Capabilities, the service's controls) and drives each
// with a small engine of its own (driver.go) over pkg/plan's plan: a plan
// changes nothing, a run ends with every node on the target and in
// service, a killed run is finished by the next, abort puts the group back
// in service, the service's controls pause and resume its update, and a
// run finishes under the cloud faults the fake injects. What the provider
// does not declare is skipped by name, and a strategy that needs it is
// refused by the plan with nothing changed.
//
// It imports no package of the plugin (pkg/plugin, internal/), only the
// contract, the plan and the snapshot, so a provider outside this
// repository runs it as well; the plugin's own commands are held to the
// providers by the e2e tests of the sim module.
package conformance

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// Harness is what a provider's test gives the suite.
type Harness struct {
	// Provider is what --provider takes.
	Provider string
	// NodeGroup is the NODEGROUP argument: the group Setup makes.
	NodeGroup string
	// NodeGroupLabel is the label naming the group, where none of the
	// registered clouds' is on the nodes (--nodegroup-label).
	NodeGroupLabel string
	// TargetLabels are the labels up-to-date nodes carry, where no cloud
	// says (provider none: --target-label).
	TargetLabels map[string]string
	// Args are the provider's own flags (cloud.BindFlags) that name the
	// target and any settings of its own the run needs.
	Args []string
	// Nodes is how many outdated nodes Setup makes.
	Nodes int
	// NoReplacement says nothing replaces a removed machine (provider none
	// with no autoscaler behind it): the run leaves no node, not Nodes.
	NoReplacement bool
	// Setup stands up a fresh fake (stopped with t.Cleanup) whose group
	// has Nodes outdated machines, each a node of client; with o.Faults
	// the fake fails that share of the cloud's answers as it models them
	// (throttling, 5xx, answers lost after the call was done). The suite
	// marks client's nodes Ready (see Kubelet).
	Setup func(t *testing.T, client kubernetes.Interface, o Options) Env
	// QuietSetup holds the kubelet stand-in while Setup runs: a Setup that
	// adds reactors to the fake clientset (whose reactor chain is not safe
	// to change while it is called) sets it; one that waits for its nodes
	// to be Ready must not.
	QuietSetup bool
	// NoFaults, when the fake injects no cloud faults, says why the
	// provider is not held to the faults case; a fake that injects none
	// without it fails the case.
	NoFaults string
}

// Options are the suite's asks of Setup.
type Options struct {
	// Faults is the share of the cloud's answers the fake fails; Seed
	// seeds which ones (the faults case tries other seeds until a run
	// meets a fault).
	Faults float64
	Seed   uint64
}

// Env is a fake Setup stood up.
type Env struct {
	// Changes lists the calls that changed the cloud so far, in order.
	Changes func() []string
	// Current reports whether a node runs the target.
	Current func(n *corev1.Node) bool
	// Faults counts the faults the fake injected; nil when it injects
	// none (see Harness.NoFaults).
	Faults func() int64
}

// Run runs the suite over h.
func Run(t *testing.T, h Harness) {
	t.Helper()
	s := newSuite(t, h)
	t.Run("plan changes nothing", s.planChangesNothing)
	for _, c := range s.cases() {
		t.Run(c.name, func(t *testing.T) {
			if c.skip != "" {
				t.Skip(c.skip)
			}
			c.run(t)
		})
	}
}

// suite is a Harness with what its provider declares.
type suite struct {
	h        Harness
	can      plan.Capability
	controls []string
	// service is the provider's cloud.ServicePlanner, nil for none: the
	// strategies it Runs are served by the cloud's service itself.
	service cloud.ServicePlanner
}

// strategy is a strategy the suite runs with the capability it needs;
// name "" is the service's own update.
type strategy struct {
	name           cloud.StrategyName
	need           plan.Capability
	maxSurge       int
	maxUnavailable string
}

// title names st in the cases' names.
func (st strategy) title() string { return cmp.Or(string(st.name), "the service's update") }

// strategies are those the suite drives, each through the capability it
// needs; a managed provider runs its service's default.
var strategies = []strategy{
	{name: cloud.StrategyEKS, need: plan.CapRemoveNodes},
	{name: cloud.StrategySurge, need: plan.CapResize, maxSurge: 1, maxUnavailable: "0"},
	{name: cloud.StrategyBlueGreen, need: plan.CapNewGroups},
	{need: plan.CapManagedUpdate},
}

// newSuite opens the provider on a fake of its own to read what it
// declares.
func newSuite(t *testing.T, h Harness) *suite {
	t.Helper()
	client, _, _ := setUp(t, h, Options{})
	p := openProvider(t, h, client, strategy{})
	s := &suite{h: h, can: cloud.Capabilities(p), controls: cloud.ManagedControls(p)}
	s.service, _ = p.(cloud.ServicePlanner)
	// A group whose service runs one strategy and the run the others (an
	// EKS managed node group) is opened for the strategy asked.
	for _, st := range strategies {
		if st.name != "" && !s.can.Has(st.need) && cloud.Capabilities(openProvider(t, h, client, st)).Has(st.need) {
			s.can |= st.need
		}
	}
	t.Logf("provider %q declares %s; controls %q", h.Provider, capabilityNames(s.can), s.controls)
	return s
}

// setUp makes a fake clientset with the kubelet stand-in and h's fake.
func setUp(t *testing.T, h Harness, o Options) (*fake.Clientset, Env, *Kubelet) {
	t.Helper()
	client := fake.NewClientset()
	k := StartKubelet(t, client)
	if h.QuietSetup {
		k.Hold()
	}
	env := h.Setup(t, client, o)
	if h.QuietSetup {
		k.Release()
	}
	waitReady(t, client, h.Nodes)
	return client, env, k
}

// waitReady waits until n nodes are Ready.
func waitReady(t *testing.T, client kubernetes.Interface, n int) {
	t.Helper()
	waitFor(t, 30*time.Second, fmt.Sprintf("the fake's %d nodes to be Ready", n), func() string {
		list, err := client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
		if err == nil && len(list.Items) >= n && !slices.ContainsFunc(list.Items, func(x corev1.Node) bool { return !Ready(&x) }) {
			return ""
		}
		return "not yet"
	})
}

// openProvider opens the provider on the group's nodes as a plan does,
// with the target h.Args name, for a run of st.
func openProvider(t *testing.T, h Harness, client kubernetes.Interface, st strategy) cloud.Provider {
	t.Helper()
	p, err := newDriver(client, h, st).provider(context.Background())
	if err != nil {
		t.Fatalf("open provider %q: %v", h.Provider, err)
	}
	return p
}

// groupNodes are the cluster's nodes.
func groupNodes(t *testing.T, client kubernetes.Interface) []corev1.Node {
	t.Helper()
	list, err := client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// capabilityNames names the capabilities in c, for the log.
func capabilityNames(c plan.Capability) string {
	var out []string
	for _, s := range strategies {
		if c.Has(s.need) {
			out = append(out, capabilityName[s.need])
		}
	}
	if len(out) == 0 {
		return "nothing"
	}
	return strings.Join(out, ", ")
}

// capabilityName names a capability by the interface that declares it.
var capabilityName = map[plan.Capability]string{
	plan.CapRemoveNodes:   "cloud.Remover",
	plan.CapResize:        "cloud.Scaler",
	plan.CapNewGroups:     "cloud.BlueGreen",
	plan.CapManagedUpdate: "cloud.ManagedUpdater",
}

// served are the strategies the provider declares what they need for.
func (s *suite) served() []strategy {
	var out []strategy
	for _, st := range strategies {
		if s.can.Has(st.need) {
			out = append(out, st)
		}
	}
	return out
}

// serviceRuns reports whether the cloud's service runs st itself.
func (s *suite) serviceRuns(st strategy) bool {
	return s.service != nil && st.name != "" && s.service.Runs(st.name)
}

func (s *suite) planChangesNothing(t *testing.T) {
	for _, st := range s.served() {
		t.Run(st.title(), func(t *testing.T) {
			client, env, _ := setUp(t, s.h, Options{})
			outdated := outdatedNodes(t, client, env)
			pl, _, err := newDriver(client, s.h, st).Plan(context.Background())
			if err != nil {
				t.Fatalf("plan: %v", err)
			}
			if len(outdated) != s.h.Nodes {
				t.Errorf("%d outdated nodes before the run, want the harness's %d", len(outdated), s.h.Nodes)
			}
			if pl.Managed == nil && !sameNames(pl.OutdatedNames(), outdated) {
				t.Errorf("the plan replaces %q, want the outdated nodes %q", pl.OutdatedNames(), outdated)
			}
			if ch := env.Changes(); len(ch) > 0 {
				t.Errorf("plan changed the cloud: %q", ch)
			}
		})
	}
}

// sameNames reports whether a and b hold the same names in any order.
func sameNames(a, b []string) bool {
	a, b = slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))
	return slices.Equal(a, b)
}

// outdatedNodes names the nodes not on the target.
func outdatedNodes(t *testing.T, client kubernetes.Interface, env Env) []string {
	t.Helper()
	var out []string
	for _, n := range groupNodes(t, client) {
		if !env.Current(&n) {
			out = append(out, n.Name)
		}
	}
	return out
}

// inService checks the run's end: every node left on the target, Ready,
// not cordoned or tainted NoSchedule, as many as before (none where
// nothing replaces machines).
func (s *suite) inService(t *testing.T, client kubernetes.Interface, env Env) {
	t.Helper()
	want := s.h.Nodes
	if s.h.NoReplacement {
		want = 0
	}
	settled(t, client, func(nodes []corev1.Node) []string {
		var out []string
		if len(nodes) != want {
			out = append(out, fmt.Sprintf("%d nodes after the run, want %d", len(nodes), want))
		}
		for _, n := range nodes {
			tainted := slices.ContainsFunc(n.Spec.Taints, func(tn corev1.Taint) bool { return tn.Effect == corev1.TaintEffectNoSchedule })
			if !env.Current(&n) || n.Spec.Unschedulable || tainted {
				out = append(out, fmt.Sprintf("node %q after the run: on the target %v, cordoned %v, tainted %v", n.Name, env.Current(&n), n.Spec.Unschedulable, tainted))
			}
		}
		return out
	})
}

// settleTime bounds the wait for the nodes of machines a command deleted
// to go: a cloud deletes a machine after the call that asks for it
// returns, and the Node object goes after the machine (the cloud
// controller manager's node lifecycle controller; the fakes' OnDelete).
const settleTime = 30 * time.Second

// settled checks the cluster's nodes with check until it finds nothing
// or settleTime passed, and reports what it found last.
func settled(t *testing.T, client kubernetes.Interface, check func([]corev1.Node) []string) {
	t.Helper()
	var found []string
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, settleTime, true, func(context.Context) (bool, error) {
		found = check(groupNodes(t, client))
		return len(found) == 0, nil
	})
	if err != nil {
		for _, f := range found {
			t.Error(f)
		}
	}
}

// mustRun runs d to a finish.
func mustRun(t *testing.T, ctx context.Context, d *driver) {
	t.Helper()
	if err := d.Run(ctx); err != nil {
		t.Fatalf("run %s: %v", d.st.title(), err)
	}
}

// String names the suite's provider.
func (s *suite) String() string { return fmt.Sprintf("provider %q", s.h.Provider) }
