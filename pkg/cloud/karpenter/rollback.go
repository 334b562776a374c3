package karpenter

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
)

// A NodePool's version, as a run records it for a rollback after the run,
// is the NodeClass it names: Karpenter keeps no earlier template of a
// NodePool and no earlier spec of a NodeClass, so what a pool ran before
// a run is known only where it was pointed at another NodeClass (its
// outdated NodeClaims keep the reference they were launched from).

// nodeClassRef is a NodePool's or NodeClaim's spec.nodeClassRef.
type nodeClassRef struct{ Group, Kind, Name string }

// String is the reference as a version: group/kind/name.
func (r nodeClassRef) String() string { return r.Group + "/" + r.Kind + "/" + r.Name }

// short is the reference as the plan names it: kind/name.
func (r nodeClassRef) short() string { return r.Kind + "/" + r.Name }

// parseClassRef reads a version written by nodeClassRef.String.
func parseClassRef(s string) (nodeClassRef, bool) {
	p := strings.Split(s, "/")
	if len(p) != 3 || p[0] == "" || p[1] == "" || p[2] == "" {
		return nodeClassRef{}, false
	}
	return nodeClassRef{Group: p[0], Kind: p[1], Name: p[2]}, true
}

var _ cloud.Retargeter = (*NodePool)(nil)

// previousClass is the NodeClass the pool's outdated NodeClaims were
// launched from when they agree on one the pool no longer names: what
// the pool ran before it was pointed at another; "" otherwise (the
// NodeClass or NodePool changed in place, nothing outdated).
func previousClass(np *nodePool, claims []nodeClaim) string {
	var prev nodeClassRef
	for _, c := range claims {
		if c.Deleting || c.Ref == np.Ref || driftOf(c, np) == "" {
			continue
		}
		if prev != (nodeClassRef{}) && prev != c.Ref {
			return ""
		}
		prev = c.Ref
	}
	if prev == (nodeClassRef{}) {
		return ""
	}
	return prev.String()
}

// targetClass reads the version a rollback asks for: the NodeClass the
// pool ran before the run it undoes, which must still exist (pointed at a
// NodeClass that does not, Karpenter would launch nothing).
func targetClass(ctx context.Context, client kubernetes.Interface, dc dynamic.Interface, pool, version string) (nodeClassRef, error) {
	ref, ok := parseClassRef(version)
	if !ok {
		return ref, &inputError{fmt.Sprintf("cannot roll back NodePool %q to template hash %q: %s", pool, version, changedInPlace(pool))}
	}
	gvr, err := classResource(client, ref)
	if err == nil {
		_, err = dc.Resource(gvr).Get(ctx, ref.Name, metav1.GetOptions{})
	}
	switch {
	case apierrors.IsNotFound(err) || err == errNoKind:
		return ref, &inputError{fmt.Sprintf("cannot roll back NodePool %q to NodeClass %s: it no longer exists; create it again, then run \"kubectl nodeupgrade rollback %s\"", pool, ref, pool)}
	case err != nil:
		return ref, fmt.Errorf("cannot read NodeClass %s: %w", ref, err)
	}
	return ref, nil
}

var errNoKind = fmt.Errorf("the API server serves no such kind")

// classResource is the resource of ref's kind, in its group's preferred
// version, as discovery names it.
func classResource(client kubernetes.Interface, ref nodeClassRef) (schema.GroupVersionResource, error) {
	groups, err := client.Discovery().ServerGroups()
	if err != nil {
		return schema.GroupVersionResource{}, fmt.Errorf("cannot list the API groups: %w", err)
	}
	for _, g := range groups.Groups {
		if g.Name != ref.Group {
			continue
		}
		list, err := client.Discovery().ServerResourcesForGroupVersion(g.PreferredVersion.GroupVersion)
		if err != nil {
			return schema.GroupVersionResource{}, fmt.Errorf("cannot list the resources of %s: %w", g.PreferredVersion.GroupVersion, err)
		}
		for _, r := range list.APIResources {
			if r.Kind == ref.Kind && !strings.Contains(r.Name, "/") {
				return schema.GroupVersionResource{Group: g.Name, Version: g.PreferredVersion.Version, Resource: r.Name}, nil
			}
		}
	}
	return schema.GroupVersionResource{}, errNoKind
}

// Retarget implements cloud.Retargeter: a rollback points the NodePool
// back at the NodeClass it ran before; Karpenter then marks the nodes of
// the other drifted, and the waves replace them (its own drift held off).
// The patch names the resourceVersion read, so that an edit meanwhile is
// not lost; Karpenter's own writes to the pool (its hash annotations after
// the hold) make it read again.
func (p *NodePool) Retarget(ctx context.Context) (string, error) {
	if p.target == (nodeClassRef{}) {
		return "", nil
	}
	var was nodeClassRef
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		was = nodeClassRef{}
		np, err := readPool(ctx, p.dyn, p.name)
		if err != nil || np.Ref == p.target {
			return err
		}
		ref := map[string]any{"group": p.target.Group, "kind": p.target.Kind, "name": p.target.Name}
		patch := map[string]any{
			"metadata": map[string]any{"resourceVersion": np.ResourceVersion},
			"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{"nodeClassRef": ref}}},
		}
		was = np.Ref
		return p.patch(ctx, patch, "point back")
	})
	if err != nil || was == (nodeClassRef{}) {
		return "", err
	}
	return fmt.Sprintf("NodePool %q pointed back at NodeClass %s (was %s)", p.name, p.target, was), nil
}

// retargetNotes say, in a rollback's plan, that the run points the pool
// back before its waves.
func (p *NodePool) retargetNotes(np *nodePool) []string {
	if p.target == (nodeClassRef{}) || np.Ref == p.target {
		return nil
	}
	return []string{fmt.Sprintf("the rollback points NodePool %q back at NodeClass %s (it names %s now) once Karpenter's drift is held off; Karpenter then marks the nodes of %s drifted, and the waves replace them", np.Name, p.target, np.Ref, np.Ref.short())}
}

// changedInPlace is why a run whose outdated nodes named the NodeClass
// the pool names now cannot be rolled back, and what goes back instead.
func changedInPlace(pool string) string {
	return fmt.Sprintf("Karpenter keeps no earlier NodePool template or NodeClass spec, and the run's outdated nodes of NodePool %q named the NodeClass it names now (changed in place); put the NodeClass or NodePool back as it was, then \"kubectl nodeupgrade run %s\"", pool, pool)
}
