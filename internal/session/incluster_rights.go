package session

import (
	"context"
	"fmt"
	"strings"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodeupgrade/kubectl-nodeupgrade/deploy"
)

// CheckRights refuses to start an in-cluster run whose identity lacks a
// right of deploy/rbac.yaml's run roles (the ClusterRole, and the Role in
// the state namespace), before it changes anything: a run that found out
// at its first taint would fail there, and its Job would start it again.
func (s Jobs) CheckRights(ctx context.Context) error {
	attrs, err := runRights(s.StateNamespace)
	if err != nil {
		return err
	}
	denied := make([]string, len(attrs))
	errs := make([]error, len(attrs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, a := range attrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			review, err := s.Client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
				&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &a}}, metav1.CreateOptions{})
			switch {
			case err != nil:
				errs[i] = err
			case !review.Status.Allowed:
				denied[i] = rightText(a)
			}
		}()
	}
	wg.Wait()
	var missing []string
	for i := range attrs {
		if errs[i] != nil {
			return fmt.Errorf("cannot check the in-cluster run's rights: %w", errs[i])
		}
		if denied[i] != "" {
			missing = append(missing, denied[i])
		}
	}
	if len(missing) > 0 {
		return Usagef("cannot run in the cluster: this pod's ServiceAccount may not %s; bind it to the run's roles of deploy/rbac.yaml (deploy/in-cluster.yaml does)", strings.Join(missing, ", "))
	}
	return nil
}

// runRights are the rights of deploy/rbac.yaml's run roles, the Role's in
// namespace ns.
func runRights(ns string) ([]authorizationv1.ResourceAttributes, error) {
	docs := strings.Split(string(deploy.RBAC), "\n---\n")
	var cluster rbacv1.ClusterRole
	var role rbacv1.Role
	if len(docs) < 2 || yaml.UnmarshalStrict([]byte(docs[0]), &cluster) != nil || yaml.UnmarshalStrict([]byte(docs[1]), &role) != nil {
		return nil, fmt.Errorf("cannot read the run's roles in deploy/rbac.yaml")
	}
	out := rightsOf(cluster.Rules, "")
	return append(out, rightsOf(role.Rules, ns)...), nil
}

func rightsOf(rules []rbacv1.PolicyRule, ns string) []authorizationv1.ResourceAttributes {
	var out []authorizationv1.ResourceAttributes
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				res, sub, _ := strings.Cut(res, "/")
				for _, v := range r.Verbs {
					out = append(out, authorizationv1.ResourceAttributes{Namespace: ns, Group: g, Resource: res, Subresource: sub, Verb: v})
				}
			}
		}
	}
	return out
}

// rightText is a right as kubectl auth can-i takes it: "patch nodes",
// "create pods/eviction", "update leases.coordination.k8s.io in
// kube-system".
func rightText(a authorizationv1.ResourceAttributes) string {
	res := a.Resource
	if a.Group != "" {
		res += "." + a.Group
	}
	if a.Subresource != "" {
		res += "/" + a.Subresource
	}
	if a.Namespace != "" {
		return fmt.Sprintf("%s %s in namespace %q", a.Verb, res, a.Namespace)
	}
	return a.Verb + " " + res
}
