package aks

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
)

// TestEveryProvisioningState: each state AKS documents is an end the run
// goes on from, or an operation it waits for (here until its deadline);
// a state it does not document is reported naming it, neither taken for
// an end nor waited on.
func TestEveryProvisioningState(t *testing.T) {
	for _, tc := range []struct {
		state    string
		settles  bool // settle returns at once
		progress cloud.UpdateState
		unknown  bool
	}{
		{"Succeeded", true, cloud.UpdateSucceeded, false},
		{"Failed", true, cloud.UpdateFailed, false},
		{"Canceled", true, cloud.UpdateCancelled, false},
		{"Upgrading", false, cloud.UpdateInProgress, false},
		{"UpgradingNodeImageVersion", false, cloud.UpdateInProgress, false},
		{"Updating", false, cloud.UpdateInProgress, false},
		{"Canceling", false, cloud.UpdateInProgress, false},
		{"Creating", false, cloud.UpdateInProgress, false},
		{"Scaling", false, cloud.UpdateInProgress, false},
		{"Deleting", false, cloud.UpdateInProgress, false},
		{"Starting", false, cloud.UpdateInProgress, false},
		{"Stopping", false, cloud.UpdateInProgress, false},
		{"Migrating", true, "", true},
	} {
		t.Run(tc.state, func(t *testing.T) {
			srv := httptest.NewServer(&docServer{doc: poolDocument(tc.state, nil)})
			defer srv.Close()
			a := newTestPool(t, srv)
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			err := a.settle(ctx)
			switch {
			case tc.unknown && (err == nil || !strings.Contains(err.Error(), `provisioning state "Migrating"`)):
				t.Errorf("settle: %v, want the unknown state named", err)
			case !tc.unknown && tc.settles && err != nil:
				t.Errorf("settle: %v, want the pool settled", err)
			case !tc.settles && !errors.Is(err, context.DeadlineExceeded):
				t.Errorf("settle: %v, want a wait for the operation", err)
			}
			p, err := a.Progress(context.Background(), poolUpdateID)
			if tc.unknown != (err != nil) || !tc.unknown && p.State != tc.progress {
				t.Errorf("Progress: %v %v, want %v (unknown %v)", p.State, err, tc.progress, tc.unknown)
			}
		})
	}
}
