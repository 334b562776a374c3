package fakecloud

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// The template's versions and their images: the groups launch version 1
// (or, for a Remover, 2 already), and img-b is the target of the tests.
const (
	template = "tmpl"
	imageA   = "img-a"
	imageB   = "img-b"
)

// worlds are the clouds in use, by the fake clientset of their cluster:
// tests running side by side each have their own.
var worlds sync.Map

// World is the cloud behind one fake cluster: its groups, their machines
// (each a Node object of the cluster once launched) and the log of every
// call that changed something, in order.
type World struct {
	client   kubernetes.Interface
	mu       sync.Mutex
	groups   map[string]*group
	versions map[string]string // template version -> image
	// defaultVersion is the template's default, which a FollowsDefault
	// group launches.
	defaultVersion string
	calls          []string
	seq            int
	updates        map[string]*update
	// holdAfter stops a service's update after that many nodes, as a PDB
	// would, until it is cancelled (0: never).
	holdAfter int
	// startLost is what StartUpdate answers once it started the update:
	// the run stopped before it heard the answer.
	startLost error
}

// New is the cloud behind client's cluster, empty.
func New(client kubernetes.Interface) *World {
	w := &World{client: client, groups: map[string]*group{}, versions: map[string]string{"1": imageA, "2": imageB},
		defaultVersion: "1", updates: map[string]*update{}}
	worlds.Store(client, w)
	return w
}

// Close forgets the cloud.
func (w *World) Close() { worlds.Delete(w.client) }

// GroupSpec is a group a test starts with.
type GroupSpec struct {
	Name      string
	NodeGroup string // the value of NodeGroupLabel its nodes carry
	Kind      Kind
	Zones     []string
	Nodes     int
	// Launches is the version it launches ("1" when empty); its machines
	// run version 1.
	Launches string
}

// group is a group of machines.
type group struct {
	name, nodeGroup string
	kind            Kind
	zones           []string
	sizes           plan.Sizes
	launches        string
	machines        map[string]*machine // by ID, which is also its node's name
	rebalanceHeld   bool
	selfUpdates     string
	settings        plan.UpdateSettings
}

type machine struct {
	id, zone, version string
	deregistered      bool
}

// AddGroup creates a group with its machines and their nodes.
func (w *World) AddGroup(ctx context.Context, s GroupSpec) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := int32(s.Nodes)
	g := &group{name: s.Name, nodeGroup: s.NodeGroup, kind: s.Kind, zones: s.Zones, sizes: plan.Sizes{Min: n, Desired: n, Max: n + 1},
		launches: cmpOr(s.Launches, "1"), machines: map[string]*machine{}, selfUpdates: "PROACTIVE",
		settings: plan.UpdateSettings{Strategy: "ROLLING", MaxUnavailable: "1", Other: map[string]string{"soak": "0s"}}}
	w.groups[g.name] = g
	for range s.Nodes {
		if err := w.launch(ctx, g, "1"); err != nil {
			return err
		}
	}
	return nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// call logs a change; w.mu is held.
func (w *World) call(format string, args ...any) {
	w.calls = append(w.calls, fmt.Sprintf(format, args...))
}

// Calls are the changes made to the cloud, in order.
func (w *World) Calls() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.calls)
}

// Groups are the groups that exist, by name.
func (w *World) Groups() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Sorted(func(yield func(string) bool) {
		for name := range w.groups {
			if !yield(name) {
				return
			}
		}
	})
}

// Sizes are a group's sizes now.
func (w *World) Sizes(name string) plan.Sizes {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.groups[name].sizes
}

// Settings are a group's update settings now.
func (w *World) Settings(name string) plan.UpdateSettings {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.groups[name].settings
}

// HoldAfter has a service's update stop after n nodes, as a PDB that
// allows nothing would, until it is cancelled.
func (w *World) HoldAfter(n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.holdAfter = n
}

// LoseStartAnswer has the next StartUpdate start the update and answer
// err, as to a run stopped before it heard the answer.
func (w *World) LoseStartAnswer(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.startLost = err
}

// launchVersion is what a group launches now: the template's default for
// one that follows it.
func (w *World) launchVersion(g *group) string {
	if g.kind == FollowsDefault {
		return w.defaultVersion
	}
	return g.launches
}

// launch starts a machine of version in the group's emptiest zone (ties:
// the first), and its node joins Ready; w.mu is held.
func (w *World) launch(ctx context.Context, g *group, version string) error {
	count := map[string]int{}
	for _, m := range g.machines {
		count[m.zone]++
	}
	zone := g.zones[0]
	for _, z := range g.zones[1:] {
		if count[z] < count[zone] {
			zone = z
		}
	}
	w.seq++
	m := &machine{id: fmt.Sprintf("%s-%d", g.name, w.seq), zone: zone, version: version}
	if _, err := w.client.CoreV1().Nodes().Create(ctx, w.node(g, m), metav1.CreateOptions{}); err != nil {
		return err
	}
	g.machines[m.id] = m
	return nil
}

// node is the Node object of a machine.
func (w *World) node(g *group, m *machine) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: m.id, Labels: map[string]string{
			NodeGroupLabel: g.nodeGroup, ImageLabel: w.versions[m.version], plan.ZoneLabel: m.zone, corev1.LabelHostname: m.id}},
		Spec: corev1.NodeSpec{ProviderID: providerPrefix + m.zone + "/" + m.id},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
}

// terminate ends a machine, and its node leaves the cluster; w.mu is held.
func (w *World) terminate(ctx context.Context, g *group, id string) error {
	delete(g.machines, id)
	err := w.client.CoreV1().Nodes().Delete(ctx, id, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// fill launches machines until the group runs its desired size; w.mu is
// held.
func (w *World) fill(ctx context.Context, g *group) error {
	for int32(len(g.machines)) < g.sizes.Desired {
		if err := w.launch(ctx, g, w.launchVersion(g)); err != nil {
			return err
		}
	}
	return nil
}

// groupOf is the group of a machine; w.mu is held.
func (w *World) groupOf(id string) *group {
	for _, g := range w.groups {
		if _, ok := g.machines[id]; ok {
			return g
		}
	}
	return nil
}

// open finds the nodes' group and resolves the target.
func (w *World) open(nodes []corev1.Node, t plan.CloudTarget) (*plan.CloudGroup, cloud.Provider, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	g, err := w.groupFor(nodes, t)
	if err != nil {
		return nil, nil, err
	}
	target, err := w.target(g, t)
	if err != nil {
		return nil, nil, err
	}
	p := (&base{w: w, group: g.name, target: target}).provider(g.kind, t.Options[optSoak])
	cg := w.cloudGroup(g, nodes, target)
	if s, ok := p.(*service); ok {
		// The service plans its update as the run will start it.
		cg.Managed = cloud.ServiceOf(s)
	}
	return cg, p, nil
}

// target is the version the target names (--fake-version, or the one
// whose image --fake-image or --fake-release names), else what the group
// launches; w.mu is held.
func (w *World) target(g *group, t plan.CloudTarget) (string, error) {
	image, flag := t.Image, flagImage
	if r := t.Options[optRelease]; r != "" {
		image, flag = r, optRelease
	}
	switch {
	case t.Version != "" && w.versions[t.Version] == "":
		return "", &inputError{fmt.Sprintf("template %q has no version %q; check --%s", template, t.Version, flagVersion)}
	case t.Version != "":
		return t.Version, nil
	case image == "":
		return w.launchVersion(g), nil
	}
	if v := w.versionOf(image); v != "" {
		return v, nil
	}
	return "", &inputError{fmt.Sprintf("no version of template %q has image %q; check --%s", template, image, flag)}
}

// groupFor is the group --fake-group names, or the one the nodes'
// machines are in; w.mu is held.
func (w *World) groupFor(nodes []corev1.Node, t plan.CloudTarget) (*group, error) {
	if t.Group != "" {
		if g := w.groups[t.Group]; g != nil {
			return g, nil
		}
		return nil, &notFoundError{fmt.Sprintf("fake group %q not found; check --%s", t.Group, flagGroup)}
	}
	var found *group
	for i := range nodes {
		g := w.groupOf(nodes[i].Name)
		switch {
		case g == nil || slices.Contains(t.Exclude, g.name):
		case found != nil && found != g:
			return nil, &inputError{fmt.Sprintf("the nodes are in fake groups %q and %q; give --%s", found.name, g.name, flagGroup)}
		default:
			found = g
		}
	}
	if found == nil {
		return nil, fmt.Errorf("fakecloud: %w", cloud.ErrNoGroup)
	}
	return found, nil
}

// notFoundError is a group that does not exist (cloud.ErrGroupNotFound).
type notFoundError struct{ msg string }

func (e *notFoundError) Error() string { return e.msg }
func (e *notFoundError) Input() bool   { return true }
func (e *notFoundError) Unwrap() error { return cloud.ErrGroupNotFound }

func (w *World) versionOf(image string) string {
	for v, img := range w.versions {
		if img == image {
			return v
		}
	}
	return ""
}

// cloudGroup is the plan's view of the group; w.mu is held.
func (w *World) cloudGroup(g *group, nodes []corev1.Node, target string) *plan.CloudGroup {
	cg := &plan.CloudGroup{GroupID: plan.GroupID{
		Provider:     Name,
		Group:        g.name,
		GroupKind:    "fake group",
		Template:     template,
		TemplateKind: "fake template",
		MachineKind:  "fake machine",
	},
		Launches: plan.Launches{
			CurrentVersion: w.launchVersion(g),
			TargetVersion:  target,
			TargetImage:    w.versions[target],
			ImageLabel:     ImageLabel,
		},
		Sizes: g.sizes, Nodes: map[string]plan.Machine{}}
	for i := range nodes {
		if m := g.machines[nodes[i].Name]; m != nil {
			cg.Nodes[m.id] = w.machine(m)
		}
	}
	switch g.kind {
	case Rebalancing:
		cg.Rebalance, cg.RebalanceHeld = rebalanceName, g.rebalanceHeld
	case FollowsDefault:
		cg.LaunchesAfter = "the template's default, made version " + target
	case LoadBalanced:
		cg.LoadBalancers = []plan.LoadBalancer{{Kind: "fake balancer", Name: g.name + "-lb"}}
	}
	return cg
}

// machine is a machine in the plan's terms.
func (w *World) machine(m *machine) plan.Machine {
	return plan.Machine{ID: m.id, Zone: m.zone, Template: template, Version: m.version, Image: w.versions[m.version],
		State: plan.MachineInService, Lifecycle: "running"}
}

// machinesOf maps the nodes to the machines of the groups named; w.mu is
// held.
func (w *World) machinesOf(nodes []*corev1.Node, names ...string) map[string]plan.Machine {
	out := map[string]plan.Machine{}
	for _, name := range names {
		g := w.groups[name]
		if g == nil {
			continue
		}
		for _, n := range nodes {
			if m := g.machines[n.Name]; m != nil {
				out[n.Name] = w.machine(m)
			}
		}
	}
	return out
}

// joinNames lists names sorted, for the log.
func joinNames(names []string) string {
	s := slices.Clone(names)
	sort.Strings(s)
	return strings.Join(s, ",")
}
