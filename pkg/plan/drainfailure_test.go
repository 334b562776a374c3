package plan

import "testing"

// TestServiceDrainFailureSaysWhatTheServiceDid: the node, the pod and the
// PDB where the service named them, and what it did with the node and its
// surge nodes, only what it did.
func TestServiceDrainFailureSaysWhatTheServiceDid(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    ServiceDrainFailure
		want string
	}{
		{"AKS's Schedule", ServiceDrainFailure{Node: "n1", Pod: "shop/web-1", PDB: "shop/web", Behavior: "Schedule", Schedulable: true, SurgeRemoved: true},
			`node "n1" not drained (pod "shop/web-1" held by PodDisruptionBudget "shop/web"); under undrainableNodeBehavior Schedule the service made it schedulable again, not upgraded, and deleted its surge nodes`},
		{"surge nodes kept", ServiceDrainFailure{Node: "n1", Pod: "shop/web-1", Schedulable: true},
			`node "n1" not drained (pod "shop/web-1"); the service made it schedulable again, not upgraded`},
		{"nothing known of what followed", ServiceDrainFailure{Node: "n1"}, `node "n1" not drained`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.f.String(); got != tc.want {
				t.Errorf("String() = %q\nwant       %q", got, tc.want)
			}
		})
	}
}
