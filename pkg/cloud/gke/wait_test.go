package gke

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	container "google.golang.org/api/container/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// TestWaitSurvivesTransientErrors: an operation's wait goes on through
// more throttled and unavailable answers than the client's own retries
// take, and stops at the first that is not transient.
func TestWaitSurvivesTransientErrors(t *testing.T) {
	many := []int{503, 429, 500, 502, 504, 503, 503, 429, 503}
	for _, tc := range []struct {
		name  string
		codes []int
		err   string
	}{
		{name: "transient answers", codes: many},
		{name: "a refusal", codes: []int{503, http.StatusForbidden}, err: "403"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeGKE(t)
			np := openPool(t, map[string]string{})
			np.c.pollEvery = time.Millisecond
			f.mu.Lock()
			f.fail[methodOperationGet] = tc.codes
			f.mu.Unlock()
			s, err := np.Settings(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			three := 3
			s.MaxSurge = &three
			err = np.Configure(context.Background(), s)
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || cloud.Transient(err)) {
				t.Errorf("Configure = %v, want error %q", err, tc.err)
			}
		})
	}
}

// TestConfigureSettlesByReading: GKE's changes carry no request ID, so the
// client does not send them again; Configure reads the pool after a
// transient answer and sends the change again only if the pool lacks it.
func TestConfigureSettlesByReading(t *testing.T) {
	for _, tc := range []struct {
		name        string
		fail, late  []int
		wantUpdates int
		err         string
	}{
		{name: "refused before it was done", fail: []int{500, 503}, wantUpdates: 1},
		{name: "done, its answer lost", late: []int{504}, wantUpdates: 1},
		{name: "refused on every attempt", fail: []int{500, 500, 500, 500, 500}, err: "500"},
		{name: "a refusal", fail: []int{http.StatusForbidden}, err: "403"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, np, s := poolWithSurgeOfThree(t)
			f.mu.Lock()
			f.fail[methodPoolUpdate], f.late[methodPoolUpdate] = tc.fail, tc.late
			f.mu.Unlock()
			err := np.Configure(context.Background(), s)
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("Configure = %v, want error %q", err, tc.err)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if len(f.updates) != tc.wantUpdates {
				t.Errorf("%d updates done, want %d", len(f.updates), tc.wantUpdates)
			}
			if tc.err == "" && f.pool.UpgradeSettings.MaxSurge != 3 {
				t.Errorf("pool's maxSurge %d, want 3", f.pool.UpgradeSettings.MaxSurge)
			}
		})
	}
}

// TestStartUpdateSettlesByReading: the upgrade is started once whether a
// transient answer came before GKE did it or after.
func TestStartUpdateSettlesByReading(t *testing.T) {
	for _, tc := range []struct {
		name       string
		fail, late []int
	}{
		{name: "refused before it was done", fail: []int{503, 500}},
		{name: "done, its answer lost", late: []int{504}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeGKE(t)
			np := openPool(t, map[string]string{optNodeVersion: "1.31"})
			np.c.pollEvery = time.Millisecond
			f.mu.Lock()
			f.fail[methodPoolUpdate], f.late[methodPoolUpdate] = tc.fail, tc.late
			f.mu.Unlock()
			id, err := np.StartUpdate(context.Background(), false)
			if err != nil || id == "" {
				t.Fatalf("StartUpdate = %q, %v; want the upgrade's operation", id, err)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if len(f.updates) != 1 {
				t.Errorf("%d updates done, want 1", len(f.updates))
			}
		})
	}
}

// TestConfigureWaitsOutARunningOperation: GKE refuses a change while an
// operation runs on the pool or its cluster (a stopped run's settings
// being put back, GKE's own), with 400 "Cluster is running incompatible
// operation". Configure waits it out, reads the pool, and sends the
// change once, never refusing the run for it.
func TestConfigureWaitsOutARunningOperation(t *testing.T) {
	base := "https://container.googleapis.com/v1/projects/" + fakeProject + "/locations/" + fakeLocation + "/clusters/" + fakeCluster
	for _, tc := range []struct {
		name    string
		running *container.Operation
		busy    int
	}{
		{name: "the pool's", running: &container.Operation{Name: "op-0", OperationType: "UPGRADE_NODES", Status: "RUNNING", TargetLink: base + "/nodePools/" + fakePool}},
		{name: "the cluster's", running: &container.Operation{Name: "op-0", OperationType: "UPDATE_CLUSTER", Status: "RUNNING", TargetLink: base}},
		{name: "one started after the read", busy: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, np, s := poolWithSurgeOfThree(t)
			f.mu.Lock()
			if tc.running != nil {
				f.ops, f.opPolls = []*container.Operation{tc.running}, 3
			}
			f.busy = tc.busy
			f.mu.Unlock()
			if err := np.Configure(context.Background(), s); err != nil {
				t.Fatalf("Configure = %v, want the running operation waited out", err)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if len(f.updates) != 1 || f.pool.UpgradeSettings.MaxSurge != 3 {
				t.Errorf("%d updates done, pool's maxSurge %d; want 1 and 3", len(f.updates), f.pool.UpgradeSettings.MaxSurge)
			}
		})
	}
}

// poolWithSurgeOfThree is a pool on a fake GKE polled every millisecond,
// and its settings with maxSurge 3: a change to make.
func poolWithSurgeOfThree(t *testing.T) (*fakeGKE, *NodePool, plan.UpdateSettings) {
	t.Helper()
	f := newFakeGKE(t)
	np := openPool(t, map[string]string{})
	np.c.pollEvery = time.Millisecond
	s, err := np.Settings(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	three := 3
	s.MaxSurge = &three
	return f, np, s
}
