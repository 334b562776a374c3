package check

import (
	"reflect"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/snapshot"
)

// slimmed is the input as the plan's snapshot holds it: its pods and
// workload controllers copied and slimmed by snapshot.Slim (the snapshot's
// wire decoding yields the same objects: TestTakeDecodesAsSlimmed).
func slimmed(in *Input) Input {
	out := *in
	out.Pods = slimEach(in.Pods)
	out.ReplicaSets = slimEach(in.ReplicaSets)
	out.Deployments = slimEach(in.Deployments)
	out.StatefulSets = slimEach(in.StatefulSets)
	return out
}

// deepCopier is an API object by value whose DeepCopy returns a pointer.
type deepCopier[T any] interface{ DeepCopy() *T }

func slimEach[T any, PT interface {
	*T
	deepCopier[T]
}](items []T) []T {
	out := make([]T, len(items))
	for i := range items {
		c := PT(&items[i]).DeepCopy()
		if _, err := snapshot.Slim(c); err != nil {
			panic(err)
		}
		out[i] = *c
	}
	return out
}

// sameOnSlimmed fails unless the audit of in finds on the slimmed objects
// exactly what it finds on the full ones, so a field a check reads cannot
// be slimmed away without a test failing.
func sameOnSlimmed(in *Input, full []Finding) (slim []Finding, same bool) {
	slim = Run(slimmed(in))
	return slim, reflect.DeepEqual(full, slim)
}
