package azurefake

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// The labels AKS puts on an agent pool's nodes
// (https://learn.microsoft.com/en-us/azure/aks/use-labels#reserved-system-labels:
// kubernetes.azure.com/agentpool, kubernetes.azure.com/node-image-version,
// kubernetes.azure.com/cluster, kubernetes.azure.com/mode; agentpool is
// the deprecated form AKS still sets).
const (
	AgentPoolLabel    = "kubernetes.azure.com/agentpool"
	NodeImageLabel    = "kubernetes.azure.com/node-image-version"
	ClusterLabel      = "kubernetes.azure.com/cluster"
	ModeLabel         = "kubernetes.azure.com/mode"
	legacyPoolLabel   = "agentpool"
	defaultZonePrefix = "westeurope-"
)

// ProviderID is the node's spec.providerID of a scale set instance, as
// the Azure cloud provider sets it:
// azure:///subscriptions/S/resourceGroups/G/providers/Microsoft.Compute/virtualMachineScaleSets/V/virtualMachines/I
// (kubernetes-sigs/cloud-provider-azure, pkg/provider: the resource ID of
// the instance behind "azure://", the node resource group in lower case).
func (s *Server) ProviderID(p *pool, m *machine) string {
	return fmt.Sprintf("azure:///subscriptions/%s/resourceGroups/%s/providers/Microsoft.Compute/virtualMachineScaleSets/%s/virtualMachines/%d",
		s.opts.Subscription, strings.ToLower(p.c.nodeGroup), p.scaleSet, m.index)
}

// joinNode makes the machine's node (kwok makes it Ready) and reports
// its kubelet version once it is.
func (s *Server) joinNode(ctx context.Context, p *pool, m *machine) error {
	s.mu.Lock()
	zones := p.model.Properties.AvailabilityZones
	zone := ""
	if len(zones) > 0 {
		zone = defaultZonePrefix + *zones[m.index%len(zones)]
	}
	name, labels := *p.model.Name, map[string]string{}
	labels[AgentPoolLabel], labels[legacyPoolLabel] = name, name
	labels[NodeImageLabel], labels[ClusterLabel], labels[ModeLabel] = m.image, p.c.nodeGroup, "user"
	for k, v := range p.model.Properties.NodeLabels { // the pool's nodeLabels
		if v != nil {
			labels[k] = *v
		}
	}
	node := scenario.Node{Name: m.name, Zone: zone, Labels: labels, ProviderID: s.ProviderID(p, m)}
	version := m.version
	s.mu.Unlock()
	if err := scenario.JoinNode(ctx, s.kube, node); err != nil {
		return err
	}
	s.versions.Set(m.name, "v"+version)
	return s.reportVersion(ctx, m.name, "v"+version)
}

// reportVersion sets the node's kubelet version once it is Ready, until
// it is seen kept: kwok writes nodeInfo when it makes the node Ready.
func (s *Server) reportVersion(ctx context.Context, name, version string) error {
	deadline := time.Now().Add(s.opts.NodeReadyTimeout)
	for kept := 0; kept < 3; {
		if time.Now().After(deadline) {
			return fmt.Errorf("node %q did not become Ready within %s", name, s.opts.NodeReadyTimeout)
		}
		n, err := s.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			kept = 0
		case err != nil:
			return err
		case !ready(n):
		case n.Status.NodeInfo.KubeletVersion == version:
			kept++
		default:
			kept = 0
			n.Status.NodeInfo.KubeletVersion = version
			if _, err := s.kube.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
				return err
			}
		}
		if err := sleep(ctx, s.opts.PollEvery); err != nil {
			return err
		}
	}
	return nil
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// leaveNode deletes the machine's node, as the cloud node controller does
// once its instance is gone.
func (s *Server) leaveNode(ctx context.Context, name string) error {
	s.versions.Forget(name)
	return scenario.LeaveNode(ctx, s.kube, name)
}

// cordon marks the node unschedulable (or not), retrying on conflicts.
func (s *Server) cordon(ctx context.Context, name string, on bool) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := s.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Spec.Unschedulable = on
		_, err = s.kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
