package cloud

import "testing"

// TestUpdateError: a service's error says its code and message, and names
// the nodes it is about unless the message already does.
func TestUpdateError(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  UpdateError
		want string
	}{
		{"an error about no node", UpdateError{Code: "InsufficientCapacity", Message: "no capacity in zone a"},
			"InsufficientCapacity: no capacity in zone a"},
		{"an error that names no node of its own", UpdateError{Code: "PodEvictionFailure", Message: "reached max retries while trying to evict pods", Nodes: []string{"ip-10-0-1-1", "ip-10-0-1-2"}},
			"PodEvictionFailure: reached max retries while trying to evict pods (nodes ip-10-0-1-1, ip-10-0-1-2)"},
		{"an error whose message names the node", UpdateError{Code: "NodeCreationFailure", Message: "instance i-1 failed to join", Nodes: []string{"i-1"}},
			"NodeCreationFailure: instance i-1 failed to join"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Errorf("Error() = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestUpdateProgressFinished: a run follows the service's update until it
// succeeded, failed or was cancelled.
func TestUpdateProgressFinished(t *testing.T) {
	for _, tc := range []struct {
		state UpdateState
		want  bool
	}{
		{UpdateInProgress, false},
		{UpdateSucceeded, true},
		{UpdateFailed, true},
		{UpdateCancelled, true},
	} {
		t.Run(string(tc.state), func(t *testing.T) {
			if got := (UpdateProgress{ID: "u-1", State: tc.state, Done: 1, Total: 3}).Finished(); got != tc.want {
				t.Errorf("Finished() = %v, want %v", got, tc.want)
			}
		})
	}
}
