// Package scenario builds workloads on a simulated cluster: kwok fake nodes,
// node groups, Deployments with PodDisruptionBudgets, and a watcher that
// records every moment a PDB is violated.
package scenario

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/capacity"
)

// Labels and annotations the simulated nodes carry.
const (
	ZoneLabel      = "topology.kubernetes.io/zone"
	RegionLabel    = "topology.kubernetes.io/region"
	Region         = "sim-region"
	HostnameLabel  = "kubernetes.io/hostname"
	KwokAnnotation = "kwok.x-k8s.io/node"
)

// Node describes a kwok fake node.
type Node struct {
	Name       string
	Zone       string // sets topology.kubernetes.io/zone (and region "sim-region")
	Labels     map[string]string
	CPU        string // default "4"
	Memory     string // default "16Gi"
	Pods       int    // default 110
	ProviderID string // optional
	Taints     []corev1.Taint
	// KubeletVersion is the kubelet the node reports (status.nodeInfo);
	// "" reports the cluster's own.
	KubeletVersion       string
	CreationTimestampAge time.Duration // not supported: the apiserver always sets creationTimestamp itself
}

// CreateNode creates a kwok fake node; kwok makes it Ready shortly after.
func CreateNode(ctx context.Context, c kubernetes.Interface, n Node) error {
	if n.Name == "" {
		return fmt.Errorf("node name is empty")
	}
	cpu, mem, pods := n.CPU, n.Memory, n.Pods
	if cpu == "" {
		cpu = "4"
	}
	if mem == "" {
		mem = "16Gi"
	}
	if pods == 0 {
		pods = 110
	}
	rl := corev1.ResourceList{}
	var err error
	if rl[corev1.ResourceCPU], err = resource.ParseQuantity(cpu); err != nil {
		return fmt.Errorf("node %s: cpu: %w", n.Name, err)
	}
	if rl[corev1.ResourceMemory], err = resource.ParseQuantity(mem); err != nil {
		return fmt.Errorf("node %s: memory: %w", n.Name, err)
	}
	rl[corev1.ResourcePods] = *resource.NewQuantity(int64(pods), resource.DecimalSI)

	labels := map[string]string{
		"type":                   "kwok",
		HostnameLabel:            n.Name,
		"kubernetes.io/os":       "linux",
		"kubernetes.io/arch":     "amd64",
		"node.kubernetes.io/sim": "true",
	}
	if n.Zone != "" {
		labels[ZoneLabel] = n.Zone
		labels[RegionLabel] = Region
	}
	for k, v := range n.Labels {
		labels[k] = v
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        n.Name,
			Labels:      labels,
			Annotations: map[string]string{KwokAnnotation: "fake"},
		},
		Spec: corev1.NodeSpec{
			ProviderID: n.ProviderID,
			Taints:     n.Taints,
		},
		Status: corev1.NodeStatus{
			Capacity:    rl,
			Allocatable: rl.DeepCopy(),
			NodeInfo:    corev1.NodeSystemInfo{KubeletVersion: n.KubeletVersion},
		},
	}
	if _, err := c.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create node %s: %w", n.Name, err)
	}
	return nil
}

// WaitNodesReady waits until every named node exists with Ready=True and
// without the taints a new node carries until the node lifecycle controller
// sees it Ready: pods created before then all land on the few nodes already
// free of them, and a plan made then finds no room on the others.
func WaitNodesReady(ctx context.Context, c kubernetes.Interface, names ...string) error {
	if len(names) == 0 {
		return nil
	}
	f := informers.NewSharedInformerFactory(c, 0)
	inf := f.Core().V1().Nodes().Informer()
	lister := f.Core().V1().Nodes().Lister()
	notReady := func() []string {
		var out []string
		for _, name := range names {
			n, err := lister.Get(name)
			if err != nil || !NodeUsable(n) {
				out = append(out, name)
			}
		}
		return out
	}
	return waitInformer(ctx, f, inf, func() (bool, string) {
		nr := notReady()
		return len(nr) == 0, "nodes not ready: " + strings.Join(nr, ", ")
	})
}

// NodeUsable says whether pods can be scheduled to n as to any node of
// the group: Ready, and without the taints a new node carries until the
// node lifecycle controller sees it Ready. Pods created while some nodes
// still carry them all land on the others.
func NodeUsable(n *corev1.Node) bool {
	return nodeReady(n) && capacity.StartupTaint(n) == ""
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// NodeGroup describes a node group whose nodes are partly outdated.
type NodeGroup struct {
	LabelKey, Name          string // e.g. "eks.amazonaws.com/nodegroup", "ng1"
	Zones                   []string
	Outdated, Current       int
	OldLabels, TargetLabels map[string]string // extra labels on outdated / current nodes
	NamePrefix              string            // default Name
}

// CreateNodeGroup creates the group's nodes, named <prefix>-old-<i> and
// <prefix>-new-<i>, spread round-robin over the zones, and waits until they
// are Ready.
func CreateNodeGroup(ctx context.Context, c kubernetes.Interface, g NodeGroup) (outdated, current []string, err error) {
	if g.LabelKey == "" || g.Name == "" {
		return nil, nil, fmt.Errorf("node group needs a label key and a name")
	}
	prefix := g.NamePrefix
	if prefix == "" {
		prefix = g.Name
	}
	zone := func(i int) string {
		if len(g.Zones) == 0 {
			return ""
		}
		return g.Zones[i%len(g.Zones)]
	}
	mk := func(kind string, count int, extra map[string]string) ([]string, error) {
		var names []string
		for i := range count {
			name := fmt.Sprintf("%s-%s-%d", prefix, kind, i)
			labels := map[string]string{g.LabelKey: g.Name}
			for k, v := range extra {
				labels[k] = v
			}
			if err := CreateNode(ctx, c, Node{Name: name, Zone: zone(i), Labels: labels}); err != nil {
				return nil, err
			}
			names = append(names, name)
		}
		return names, nil
	}
	if outdated, err = mk("old", g.Outdated, g.OldLabels); err != nil {
		return nil, nil, err
	}
	if current, err = mk("new", g.Current, g.TargetLabels); err != nil {
		return nil, nil, err
	}
	if err := WaitNodesReady(ctx, c, slices.Concat(outdated, current)...); err != nil {
		return nil, nil, err
	}
	return outdated, current, nil
}

// waitInformer starts the factory and re-evaluates check after the initial
// sync and on every event until it holds or ctx ends.
func waitInformer(ctx context.Context, f informers.SharedInformerFactory, inf cache.SharedIndexInformer, check func() (bool, string)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		f.Shutdown()
	}()
	kick := make(chan struct{}, 1)
	notify := func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { notify() },
		UpdateFunc: func(any, any) { notify() },
		DeleteFunc: func(any) { notify() },
	}); err != nil {
		return err
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return fmt.Errorf("informer did not sync: %w", ctx.Err())
	}
	for {
		ok, why := check()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", why, ctx.Err())
		case <-kick:
		}
	}
}

// JoinNode creates the node a cloud machine registers as, or leaves the
// one of that name that exists already: a kubelet that finds its Node
// object registered takes it as it is, taints and cordon included.
func JoinNode(ctx context.Context, c kubernetes.Interface, n Node) error {
	if err := CreateNode(ctx, c, n); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// LeaveNode deletes the node of a machine that is gone, as the cloud
// controller manager does; a node already gone is fine.
func LeaveNode(ctx context.Context, c kubernetes.Interface, name string) error {
	err := c.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
