package cloud

import (
	corev1 "k8s.io/api/core/v1"
)

// Exclusive is a Claimer whose nodes provider none must not serve: it
// would drain and delete them while the controller that owns them
// (Karpenter) replaces the same nodes at its own pace.
type Exclusive interface {
	Claimer
	// RefuseNone says why, naming the --provider to use instead.
	RefuseNone(nodes []corev1.Node) string
}

// NoneRefused is the reason provider none is refused on nodes an
// Exclusive cloud claims, "" when it is not.
func NoneRefused(nodes []corev1.Node) string {
	for _, name := range Names() {
		ex, ok := clouds[name].(Exclusive)
		if !ok {
			continue
		}
		for i := range nodes {
			if ex.Claims(&nodes[i]) {
				return ex.RefuseNone(nodes)
			}
		}
	}
	return ""
}
