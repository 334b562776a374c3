package upgrade

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/drain"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/kubetest"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/snapshot"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// The fakes a run is tested with: an API server with eviction, a cloud
// group whose machines are the fake cluster's nodes, and another terminal
// sending requests.

const groupLabel = "eks.amazonaws.com/nodegroup"

// versionLabel names a node's launch template version, as EKS's label
// does (see plan.CloudGroup.VersionLabel).
const versionLabel = "eks.amazonaws.com/sourceLaunchTemplateVersion"

var (
	podsResource = corev1.SchemeGroupVersion.WithResource("pods")
	testTaint    = corev1.Taint{Key: "nodeupgrade.dev/outdated", Effect: corev1.TaintEffectNoSchedule}
)

// testClient is a fake clientset with what a run needs of an API server
// beyond storage: an accepted eviction deletes its pod, Events get the
// names their generateName asks for, and an eviction can be refused.
//
// A pod is deleted only once a drain watches its node, or the engine all
// pods (its drains follow that watch): the fake's watch does not replay a
// delete made between its list and its watch, which a real API server does
// (pkg/drain's tests do the same).
type testClient struct {
	*fake.Clientset
	mu      sync.Mutex
	watched map[string]chan struct{}
	all     chan struct{} // closed once all pods are watched
	allOnce sync.Once
	// nodesWatched is closed once the nodes are watched: the fake
	// clientset drops what changes between an informer's list and its
	// watch, so the fake group changes nodes only after it.
	nodesWatched chan struct{}
	nodesOnce    sync.Once
	refuse       map[string]error // eviction answers by pod name
	// afterEvict, if set, is told each accepted eviction, under the
	// fake's lock (it may use the tracker, not the client): a test's
	// controllers
	afterEvict func(ns, name string)
	evicted    []string
	deleted    []string
	eventSeq   int
}

func newTestClient(objs ...runtime.Object) *testClient {
	c := &testClient{Clientset: fake.NewClientset(objs...), watched: map[string]chan struct{}{}, all: make(chan struct{}), refuse: map[string]error{},
		nodesWatched: make(chan struct{})}
	c.PrependWatchReactor("nodes", func(a k8stesting.Action) (bool, watch.Interface, error) {
		w, err := c.Tracker().Watch(corev1.SchemeGroupVersion.WithResource("nodes"), "", a.(k8stesting.WatchActionImpl).ListOptions)
		if err == nil {
			c.nodesOnce.Do(func() { close(c.nodesWatched) })
		}
		return true, w, err
	})
	c.PrependWatchReactor("pods", func(a k8stesting.Action) (bool, watch.Interface, error) {
		opts := a.(k8stesting.WatchActionImpl).ListOptions
		w, err := c.Tracker().Watch(podsResource, a.GetNamespace(), opts)
		if node, ok := strings.CutPrefix(opts.FieldSelector, "spec.nodeName="); err == nil && ok {
			ch := c.watchedCh(node)
			select {
			case <-ch:
			default:
				close(ch)
			}
		}
		if err == nil && opts.FieldSelector == "" && a.GetNamespace() == "" {
			c.allOnce.Do(func() { close(c.all) })
		}
		return true, w, err
	})
	c.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		name := a.(k8stesting.DeleteAction).GetName()
		c.mu.Lock()
		c.deleted = append(c.deleted, name)
		c.mu.Unlock()
		return true, nil, c.removePod(a.GetNamespace(), name)
	})
	c.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		ev := a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
		c.mu.Lock()
		err := c.refuse[ev.Name]
		if err == nil {
			c.evicted = append(c.evicted, ev.Name)
		}
		after := c.afterEvict
		c.mu.Unlock()
		if err != nil {
			return true, nil, err
		}
		if err := c.removePod(ev.Namespace, ev.Name); err != nil {
			return true, nil, err
		}
		if after != nil {
			after(ev.Namespace, ev.Name)
		}
		return true, nil, nil
	})
	c.PrependReactor("create", "events", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ev := a.(k8stesting.CreateAction).GetObject().(*corev1.Event)
		if ev.Name == "" {
			c.mu.Lock()
			c.eventSeq++
			ev.Name = fmt.Sprintf("%s%d", ev.GenerateName, c.eventSeq)
			c.mu.Unlock()
		}
		return false, nil, nil // stored by the tracker
	})
	return c
}

func (c *testClient) watchedCh(node string) chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := c.watched[node]
	if ch == nil {
		ch = make(chan struct{})
		c.watched[node] = ch
	}
	return ch
}

// removePod deletes a pod once its node's drain watches it; it runs under
// the fake's lock, so it uses the tracker, not the client.
func (c *testClient) removePod(ns, name string) error {
	obj, err := c.Tracker().Get(podsResource, ns, name)
	if err != nil {
		return err
	}
	ch := c.watchedCh(obj.(*corev1.Pod).Spec.NodeName)
	go func() {
		select {
		case <-ch:
		case <-c.all:
		}
		_ = c.Tracker().Delete(podsResource, ns, name)
	}()
	return nil
}

func (c *testClient) refuseEviction(pod string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refuse[pod] = err
}

func (c *testClient) evictedPods() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Sorted(slices.Values(c.evicted))
}

func (c *testClient) deletedPods() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Sorted(slices.Values(c.deleted))
}

// nodes returns the cluster's nodes by name.
func (c *testClient) nodes(t *testing.T) map[string]corev1.Node {
	t.Helper()
	return nodesIn(t, c.Clientset)
}

// podNames returns the names of the pods left, sorted.
func (c *testClient) podNames(t *testing.T) []string {
	t.Helper()
	list, err := c.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range list.Items {
		names = append(names, p.Name)
	}
	sort.Strings(names)
	return names
}

// eventsOf returns the reasons of the Events recorded on an object.
func (c *testClient) eventsOf(t *testing.T, kind, name string) []string {
	t.Helper()
	list, err := c.CoreV1().Events("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, ev := range list.Items {
		if ev.InvolvedObject.Kind == kind && ev.InvolvedObject.Name == name {
			reasons = append(reasons, ev.Reason)
		}
	}
	return reasons
}

// eventCount counts the node events of the given reason.
func (c *testClient) eventCount(t *testing.T, reason string) int {
	t.Helper()
	list, err := c.CoreV1().Events("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range list.Items {
		if ev.InvolvedObject.Kind == "Node" && ev.Reason == reason {
			n++
		}
	}
	return n
}

// groupNode is a Ready node of node group "ng" whose machine runs the
// given template version.
func groupNode(name, zone, version string) *corev1.Node {
	n := testNode(name, zone, "4")
	n.Labels[groupLabel] = "ng"
	n.Labels[versionLabel] = version
	n.Spec.ProviderID = "fake:///" + zone + "/i-" + name
	return n
}

// imageNode is a node of node group "ng" that no cloud owns; its image
// label says whether it is outdated.
func imageNode(name, zone, image string, mutate ...func(*corev1.Node)) *corev1.Node {
	n := testNode(name, zone, "4", mutate...)
	n.Labels[groupLabel] = "ng"
	n.Labels["image"] = image
	return n
}

// appPod is a running pod of a ReplicaSet, evictable without --force. The
// ReplicaSet is not in the cluster: nothing is waited for once it is
// evicted (pods do not come back in a fake cluster).
func appPod(name, node, cpu string) *corev1.Pod {
	return testPod(name, node, cpu, func(p *corev1.Pod) {
		p.UID = types.UID("uid-" + name)
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", UID: "rs", Controller: ptr.To(true)}}
	})
}

func cordoned(n *corev1.Node) { n.Spec.Unschedulable = true }

func tainted(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, testTaint) }

// launchMode is what happens to the machines a fake group launches.
type launchMode int

const (
	launchReady        launchMode = iota // their nodes join and are Ready
	launchNotReady                       // their nodes join and stay NotReady
	launchNeverJoins                     // they run, but no node joins
	launchNothing                        // none starts (no capacity)
	launchWrongVersion                   // their nodes join labelled with the old version
	launchOldVersion                     // they run the old version (someone moved the default back)
)

// fakeGroup is a cloud group whose machines are the nodes of a fake
// clientset. Raising its desired size launches machines (as launch says),
// removing a node launches its replacement, Shrink removes one with the
// desired size; raiseAfterSizes lets a test act as the cluster autoscaler.
type fakeGroup struct {
	client  kubernetes.Interface
	name    string
	version string   // what Setup points the group at and new machines run
	zones   []string // where new machines go, in turn
	launch  launchMode
	// emptiestFirst launches as AWS does instead: in the zone with the
	// fewest machines, ties to the first; onlyZone, where set, is the one
	// zone with capacity.
	emptiestFirst bool
	onlyZone      string

	mu       sync.Mutex
	sizes    plan.Sizes
	calls    []string
	machines map[string]plan.Machine // by node name
	pending  []plan.Machine          // launched, and no node joined
	launched int
	setupErr error
	// raiseAfterSizes raises desired by one after the nth call of Sizes.
	raiseAfterSizes int
	sizesCalls      int
	// engine, once set, has a node the group adds or removes in its cache
	// before the call returns, so its first look after a change sees it
	// and no test waits out the pause between looks at the group.
	engine *Engine
}

var (
	_ cloud.Scaler    = (*fakeGroup)(nil)
	_ cloud.BlueGreen = (*fakeBlueGreen)(nil)
)

// newFakeGroup is group "asg" of the nodes given, pointed at version "2"
// by Setup; a node's machine runs the version of its label ("1" if none).
func newFakeGroup(client kubernetes.Interface, sizes plan.Sizes, nodes ...*corev1.Node) *fakeGroup {
	f := &fakeGroup{client: client, name: "asg", version: "2", sizes: sizes, machines: map[string]plan.Machine{}}
	for _, n := range nodes {
		f.addMachine(n)
	}
	return f
}

func (f *fakeGroup) addMachine(n *corev1.Node) {
	zone := n.Labels[plan.ZoneLabel]
	if !slices.Contains(f.zones, zone) {
		f.zones = append(f.zones, zone)
		sort.Strings(f.zones)
	}
	version := n.Labels[versionLabel]
	if version == "" {
		version = "1"
	}
	f.machines[n.Name] = plan.Machine{ID: "i-" + n.Name, Zone: zone, Template: "lt", Version: version, State: plan.MachineInService, Lifecycle: "InService"}
}

func (f *fakeGroup) Name() string      { return "fake" }
func (f *fakeGroup) Describe() string  { return "terminate" }
func (f *fakeGroup) GroupName() string { return f.name }

func (f *fakeGroup) Setup(context.Context) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "Setup")
	return f.version, f.setupErr
}

func (f *fakeGroup) Sizes(context.Context) (plan.Sizes, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sizesCalls++
	s := f.sizes
	if f.raiseAfterSizes > 0 && f.sizesCalls == f.raiseAfterSizes {
		f.sizes.Desired++
	}
	return s, nil
}

func (f *fakeGroup) SetDesiredAndMax(ctx context.Context, d, m int32) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sizes.Desired, f.sizes.Max = d, m
	f.calls = append(f.calls, fmt.Sprintf("SetDesiredAndMax %d %d", d, m))
	return f.fill(ctx)
}

func (f *fakeGroup) SetMax(_ context.Context, m int32) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sizes.Max = m
	f.calls = append(f.calls, fmt.Sprintf("SetMax %d", m))
	return nil
}

func (f *fakeGroup) Machines(_ context.Context, nodes []*corev1.Node) (map[string]plan.Machine, []plan.Machine, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	byNode := map[string]plan.Machine{}
	for _, n := range nodes {
		if m, ok := f.machines[n.Name]; ok {
			byNode[n.Name] = m
		}
	}
	return byNode, slices.Clone(f.pending), nil
}

func (f *fakeGroup) Current(m plan.Machine, version string) bool { return m.Version == version }

// RemoveNode terminates the node's machine; the group replaces it.
func (f *fakeGroup) RemoveNode(ctx context.Context, node string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "RemoveNode "+node)
	if err := f.remove(ctx, node); err != nil {
		return err
	}
	return f.fill(ctx)
}

func (f *fakeGroup) Shrink(ctx context.Context, node string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sizes.Desired--
	f.calls = append(f.calls, "Shrink "+node)
	f.awaitNodeWatch()
	if err := f.client.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{}); err != nil {
		return err
	}
	delete(f.machines, node)
	return f.settle(node, false)
}

// remove terminates a node's machine and deletes the node; f.mu is held.
func (f *fakeGroup) remove(ctx context.Context, node string) error {
	delete(f.machines, node)
	f.awaitNodeWatch()
	err := f.client.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return f.settle(node, false)
}

// fill launches machines until the group runs its desired size; f.mu is
// held.
func (f *fakeGroup) fill(ctx context.Context) error {
	for int32(len(f.machines)+len(f.pending)) < f.sizes.Desired && f.launch != launchNothing {
		f.launched++
		name := fmt.Sprintf("%s-new-%d", f.name, f.launched)
		zone := f.zones[(f.launched-1)%len(f.zones)]
		if f.emptiestFirst {
			zone = f.emptiestZone()
		}
		if f.onlyZone != "" {
			zone = f.onlyZone
		}
		m := plan.Machine{ID: "i-" + name, Zone: zone, Template: "lt", Version: f.version, State: plan.MachineInService, Lifecycle: "InService"}
		if f.launch == launchOldVersion {
			m.Version = "1"
		}
		if f.launch == launchNeverJoins {
			m.State, m.Lifecycle = plan.MachinePending, "Pending"
			f.pending = append(f.pending, m)
			continue
		}
		n := groupNode(name, zone, m.Version)
		switch f.launch {
		case launchNotReady:
			n.Status.Conditions[0].Status = corev1.ConditionFalse
		case launchWrongVersion:
			n.Labels[versionLabel] = "1"
		}
		f.awaitNodeWatch()
		if _, err := f.client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			return err
		}
		f.machines[name] = m
		if err := f.settle(name, true); err != nil {
			return err
		}
	}
	return nil
}

// joinPending has the nodes of the machines that never joined join now,
// Ready.
func (f *fakeGroup) joinPending(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.pending {
		name := strings.TrimPrefix(m.ID, "i-")
		if _, err := f.client.CoreV1().Nodes().Create(ctx, groupNode(name, m.Zone, m.Version), metav1.CreateOptions{}); err != nil {
			return err
		}
		m.State, m.Lifecycle = plan.MachineInService, "InService"
		f.machines[name] = m
	}
	f.pending = nil
	return nil
}

// emptiestZone is the zone with the fewest machines, the first of those
// tied; f.mu is held.
func (f *fakeGroup) emptiestZone() string {
	count := map[string]int{}
	for _, m := range f.machines {
		count[m.Zone]++
	}
	for _, m := range f.pending {
		count[m.Zone]++
	}
	best := f.zones[0]
	for _, z := range f.zones[1:] {
		if count[z] < count[best] {
			best = z
		}
	}
	return best
}

// zoneCounts counts the group's machines by zone, in the zones' order.
func (f *fakeGroup) zoneCounts() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]int, len(f.zones))
	for _, m := range f.machines {
		out[slices.Index(f.zones, m.Zone)]++
	}
	for _, m := range f.pending {
		out[slices.Index(f.zones, m.Zone)]++
	}
	return out
}

// awaitNodeWatch waits, up to 10 s, until the engine watches the nodes,
// where the client tells (a testClient).
func (f *fakeGroup) awaitNodeWatch() {
	if c, ok := f.client.(*testClient); ok {
		select {
		case <-c.nodesWatched:
		case <-time.After(10 * time.Second):
		}
	}
}

// settle waits until the engine's cache has the node (present) or not.
func (f *fakeGroup) settle(node string, present bool) error {
	if f.engine == nil || f.engine.view == nil {
		return nil
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if f.engine.nodes.nodeExists(node) == present {
			return nil
		}
	}
	return fmt.Errorf("fake group: the engine's cache never saw node %q present=%v", node, present)
}

func (f *fakeGroup) sizesNow() plan.Sizes {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sizes
}

func (f *fakeGroup) callsNow() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// callsLike returns the calls that begin with prefix.
func (f *fakeGroup) callsLike(prefix string) []string {
	var out []string
	for _, c := range f.callsNow() {
		if strings.HasPrefix(c, prefix) {
			out = append(out, c)
		}
	}
	return out
}

// machineNodes returns the names of the nodes of the group's machines.
func (f *fakeGroup) machineNodes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Sorted(func(yield func(string) bool) {
		for n := range f.machines {
			if !yield(n) {
				return
			}
		}
	})
}

// cloudGroup is the planning view of the group, as a provider's Open
// gives it: every machine of the group, the sizes, the target version.
func (f *fakeGroup) cloudGroup() *plan.CloudGroup {
	f.mu.Lock()
	defer f.mu.Unlock()
	machines := map[string]plan.Machine{}
	for n, m := range f.machines {
		machines[n] = m
	}
	return &plan.CloudGroup{GroupID: plan.GroupID{
		Provider:     "fake",
		Group:        f.name,
		GroupKind:    "Auto Scaling group",
		Template:     "lt",
		TemplateKind: "launch template",
		MachineKind:  "instance",
	}, Can: plan.CapRemoveNodes | plan.CapResize | plan.CapNewGroups,

		Launches: plan.Launches{
			CurrentVersion: "1",
			TargetVersion:  f.version,
			VersionLabel:   versionLabel,
		}, Sizes: f.sizes, Nodes: machines}
}

// fakeBlueGreen is a fake group (blue) that stands a green group up beside
// it, launching green's machines as blue launches its own.
type fakeBlueGreen struct {
	*fakeGroup
	quotaErr error
	// deletedErr is what DeleteGroup answers once the group is gone: the
	// run killed before it saw the delete end.
	deletedErr error
	// green is the group CreateGreen made, or one given before the run.
	green *fakeGroup
	using string
}

func newFakeBlueGreen(blue *fakeGroup) *fakeBlueGreen { return &fakeBlueGreen{fakeGroup: blue} }

func (f *fakeBlueGreen) call(c string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
}

func (f *fakeBlueGreen) PrepareTarget(context.Context) (string, error) {
	f.call("PrepareTarget")
	return f.version, nil
}

func (f *fakeBlueGreen) CheckQuota(context.Context) error {
	f.call("CheckQuota")
	return f.quotaErr
}

func (f *fakeBlueGreen) GreenName(version string) string { return f.name + "-v" + version }

func (f *fakeBlueGreen) CreateGreen(ctx context.Context, name, version string, sizes plan.Sizes) error {
	f.call(fmt.Sprintf("CreateGreen %s %s %s", name, version, sizes))
	if f.green == nil {
		f.green = &fakeGroup{client: f.client, name: name, version: version, zones: f.zones, launch: f.launch, machines: map[string]plan.Machine{}, engine: f.engine}
	}
	f.green.mu.Lock()
	defer f.green.mu.Unlock()
	f.green.sizes = sizes
	return f.green.fill(ctx)
}

func (f *fakeBlueGreen) UseGreen(name string) {
	f.call("UseGreen " + name)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.using = name
}

// Machines reports green's machines too once the run uses green.
func (f *fakeBlueGreen) Machines(ctx context.Context, nodes []*corev1.Node) (map[string]plan.Machine, []plan.Machine, error) {
	byNode, pending, _ := f.fakeGroup.Machines(ctx, nodes)
	f.mu.Lock()
	green := f.green
	using := green != nil && f.using == green.name
	f.mu.Unlock()
	if using {
		g, p, _ := green.Machines(ctx, nodes)
		for n, m := range g {
			byNode[n] = m
		}
		pending = append(pending, p...)
	}
	return byNode, pending, nil
}

func (f *fakeBlueGreen) group(name string) (*fakeGroup, error) {
	switch {
	case name == f.name:
		return f.fakeGroup, nil
	case f.green != nil && name == f.green.name:
		return f.green, nil
	}
	return nil, fmt.Errorf("no group %q", name)
}

func (f *fakeBlueGreen) GroupSizes(_ context.Context, name string) (plan.Sizes, error) {
	g, err := f.group(name)
	if err != nil {
		return plan.Sizes{}, err
	}
	return g.sizesNow(), nil
}

func (f *fakeBlueGreen) SetGroupSizes(ctx context.Context, name string, s plan.Sizes) error {
	f.call(fmt.Sprintf("SetGroupSizes %s %s", name, s))
	g, err := f.group(name)
	if err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.sizes = s
	return g.fill(ctx)
}

// DeleteGroup terminates every machine of the group.
func (f *fakeBlueGreen) DeleteGroup(ctx context.Context, name string) error {
	f.call("DeleteGroup " + name)
	g, err := f.group(name)
	if err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for n := range g.machines {
		if err := g.remove(ctx, n); err != nil {
			return err
		}
	}
	g.sizes, g.pending = plan.Sizes{}, nil
	return f.deletedErr
}

// fakeControl is another terminal's requests: Pending reads the one
// waiting, send leaves one and tells the live watch.
type fakeControl struct {
	mu       sync.Mutex
	pending  string
	cleared  int
	watches  int
	watching chan struct{} // closed once a live watch is open
	live     chan string
	// endFirstWatch closes the first watch at once, as when the API server
	// ends a watch.
	endFirstWatch bool
}

func newFakeControl() *fakeControl {
	return &fakeControl{watching: make(chan struct{}), live: make(chan string, 1)}
}

func (c *fakeControl) Pending(context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pending, nil
}

func (c *fakeControl) Clear(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending = ""
	c.cleared++
	return nil
}

func (c *fakeControl) Watch(context.Context) (<-chan string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watches++
	if c.endFirstWatch && c.watches == 1 {
		ended := make(chan string)
		close(ended)
		return ended, nil
	}
	select {
	case <-c.watching:
	default:
		close(c.watching)
	}
	return c.live, nil
}

// leave leaves a request pending, as "kubectl nodeupgrade cancel" does
// between phases.
func (c *fakeControl) leave(req string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending = req
}

// sendWhenWatched sends a request once the run watches for requests.
func (c *fakeControl) sendWhenWatched(req string) {
	go func() {
		<-c.watching
		c.leave(req)
		c.live <- req
	}()
}

func (c *fakeControl) clearedNow() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cleared
}

// lockedBuffer is the run's output, written by parallel drains.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var _ io.Writer = (*lockedBuffer)(nil)

// buildPlan plans the upgrade of node group "ng" from the fake cluster, as
// "plan" would.
func buildPlan(t *testing.T, client kubernetes.Interface, in plan.Input) *plan.Plan {
	t.Helper()
	snap, err := snapshot.Take(context.Background(), client, nil)
	if err != nil {
		t.Fatal(err)
	}
	in.NodeGroup, in.NodeGroupLabel, in.Taint, in.Seed = "ng", groupLabel, testTaint, 1
	if in.Provider == "" {
		in.Provider = "fake"
	}
	p, err := plan.Build(snap, in)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// outcome is what a run did.
type outcome struct {
	err error
	// phases are the states the run entered, a batch phase with its
	// 1-based batch ("Drain 2").
	phases []string
	done   []string // the nodes done, as last reported
	out    string
	engine *Engine
}

func phaseName(s plan.State) string {
	if plan.BatchPhase(s.Phase) {
		return fmt.Sprintf("%s %d", s.Phase, s.Batch+1)
	}
	return string(s.Phase)
}

// runEngine runs cfg with small timeouts; at is told every state entered,
// before its step runs (and then cfg.OnProgress, if set); the groups wait
// for the engine's cache.
func runEngine(t *testing.T, cfg Config, at func(plan.State), groups ...*fakeGroup) outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if cfg.Taint.Key == "" {
		cfg.Taint = testTaint
	}
	if cfg.Drain.Timeout == 0 {
		cfg.Drain.Timeout = 20 * time.Second
	}
	if cfg.NodeReadyTimeout == 0 {
		cfg.NodeReadyTimeout = 20 * time.Second
	}
	if cfg.RecoverTimeout == 0 {
		cfg.RecoverTimeout = 20 * time.Second
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 10 * time.Millisecond
	}
	if cfg.Record == nil {
		cfg.Record = &state.Record{}
	}
	out, ok := cfg.Out.(*lockedBuffer) // a test's own, to read it meanwhile
	if !ok {
		out = &lockedBuffer{}
		cfg.Out = out
	}
	var o outcome
	record := cfg.OnProgress // a test's own, to fail it
	cfg.OnProgress = func(ctx context.Context, s plan.State, done []string) error {
		o.done = slices.Clone(done)
		// A step that finishes nodes and then waits reports its state
		// again: that is progress, not a state entered.
		if n := len(o.phases); n == 0 || o.phases[n-1] != phaseName(s) {
			o.phases = append(o.phases, phaseName(s))
			if at != nil {
				at(s)
			}
		}
		if record != nil {
			return record(ctx, s, done)
		}
		return nil
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		g.engine = e
	}
	o.engine = e
	o.err = e.Run(ctx)
	o.out = out.String()
	return o
}

// cloudRun is the configuration of a run on a fake group, with a record
// saved in memory.
func cloudRun(p *plan.Plan, client kubernetes.Interface, provider cloud.Provider) Config {
	return Config{Client: client, Plan: p, Provider: provider, Record: &state.Record{}, Events: NewRecorder(client, nil)}
}

func drainOpts() drain.Options {
	return drain.Options{Timeout: 20 * time.Second, GracePeriodSeconds: -1}
}

// Nodes and pods from the builder the capacity and engine tests share.
var (
	testNode = kubetest.Node
	testPod  = kubetest.Pod
)
