package gke

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	container "google.golang.org/api/container/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// TestPlanStrategies: each strategy's settings, phases and controls, and
// what GKE would refuse, refused before anything changes.
func TestPlanStrategies(t *testing.T) {
	day := 24 * time.Hour
	for _, tc := range []struct {
		name       string
		in         plan.Input
		autoscaled bool
		master     string
		err        string
		strategy   string
		phases     []string
		controls   []string
	}{
		{name: "surge", in: plan.Input{Strategy: plan.StrategySurge, MaxSurge: 2, MaxUnavailable: "1"}, strategy: "SURGE",
			phases: []string{"Configure", "Upgrade", "RestoreSettings"}, controls: []string{"cancel", "resume", "rollback"}},
		{name: "blue-green by count", in: plan.Input{Strategy: plan.StrategyBlueGreen, BlueGreen: plan.BlueGreenInput{BatchNodes: 1, BatchSoak: time.Minute, NodePoolSoak: time.Hour}}, strategy: "BLUE_GREEN",
			phases: []string{"Configure", "CreateGreen", "CordonBlue", "DrainBlue", "Soak", "DeleteBlue", "RestoreSettings"}, controls: []string{"cancel", "resume", "rollback", "complete"}},
		{name: "blue-green by percent", in: plan.Input{Strategy: plan.StrategyBlueGreen, BlueGreen: plan.BlueGreenInput{BatchNodes: -1, BatchPercent: 0.5, NodePoolSoak: time.Hour}}, strategy: "BLUE_GREEN",
			phases: []string{"Configure", "CreateGreen", "CordonBlue", "DrainBlue", "Soak", "DeleteBlue", "RestoreSettings"}, controls: []string{"cancel", "resume", "rollback", "complete"}},
		{name: "soaks over 7 days", in: plan.Input{Strategy: plan.StrategyBlueGreen, BlueGreen: plan.BlueGreenInput{BatchNodes: 1, BatchSoak: 4 * day, NodePoolSoak: 4 * day}}, err: "above GKE's limit of 7 days"},
		{name: "autoscaled", in: plan.Input{Strategy: plan.StrategyAutoscaledBlueGreen, BlueGreen: plan.BlueGreenInput{WaitPeriod: time.Hour}}, autoscaled: true, master: minAutoscaledMaster, strategy: "BLUE_GREEN",
			phases: []string{"Configure", "CreateGreen", "CordonBlue", "Wait", "DrainBlue", "DeleteBlue", "RestoreSettings"}, controls: []string{"cancel", "resume"}},
		{name: "autoscaled without autoscaling", in: plan.Input{Strategy: plan.StrategyAutoscaledBlueGreen}, master: minAutoscaledMaster, err: "needs a node pool with autoscaling"},
		{name: "autoscaled on an old control plane", in: plan.Input{Strategy: plan.StrategyAutoscaledBlueGreen}, autoscaled: true, err: "needs a control plane of"},
		{name: "autoscaled wait over 7 days", in: plan.Input{Strategy: plan.StrategyAutoscaledBlueGreen, BlueGreen: plan.BlueGreenInput{WaitPeriod: 8 * day}}, autoscaled: true, master: minAutoscaledMaster, err: "GKE takes 0 to 7 days"},
		{name: "short-lived on a standard pool", in: plan.Input{Strategy: plan.StrategyShortLived}, err: "flex-start and queued-provisioning pools only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeGKE(t)
			if tc.master != "" {
				f.master = tc.master
			}
			if tc.autoscaled {
				f.pool.Autoscaling = &container.NodePoolAutoscaling{Enabled: true, MinNodeCount: 1, MaxNodeCount: 3}
			}
			np := openPool(t, map[string]string{optPDBTimeout: "90s"})
			mp, err := np.Plan(tc.in, 2, 1)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("want an error with %q, got %v", tc.err, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var phases []string
			for _, s := range mp.Steps {
				phases = append(phases, s.Phase)
			}
			if mp.During.Strategy != tc.strategy || !slices.Equal(phases, tc.phases) || !slices.Equal(mp.Controls, tc.controls) || mp.During.Other[setPDBTimeout] != "90s" {
				t.Errorf("strategy %s, phases %v, controls %v, PDB timeout %q; want %s, %v, %v, 90s", mp.During.Strategy, phases, mp.Controls, mp.During.Other[setPDBTimeout], tc.strategy, tc.phases, tc.controls)
			}
			if len(mp.Details) == 0 || mp.Revision != f.pool.Etag {
				t.Errorf("details %v, revision %q (etag %q)", mp.Details, mp.Revision, f.pool.Etag)
			}
		})
	}
}

// TestRefusalsAreTheUsers: what GKE refuses (a stale etag, a bad
// argument) is the user's to fix (exit 2); another failure is not.
func TestRefusalsAreTheUsers(t *testing.T) {
	for _, tc := range []struct {
		name, method string
		code         int
		call         func(*NodePool) error
		msg          string
		input        bool
	}{
		{"a stale etag", methodPoolUpdate, http.StatusConflict, func(n *NodePool) error { _, err := n.StartUpdate(context.Background(), false); return err }, "changed since the plan", true},
		{"a refused update", methodPoolUpdate, http.StatusBadRequest, func(n *NodePool) error { _, err := n.ResumeUpdate(context.Background(), "op"); return err }, "GKE refused the update", true},
		{"a refused cancel", methodOperationCancel, http.StatusBadRequest, func(n *NodePool) error { return n.CancelUpdate(context.Background(), "op") }, "GKE refused to cancel", true},
		{"a refused rollback", methodPoolRollback, http.StatusBadRequest, func(n *NodePool) error { _, err := n.RollbackUpdate(context.Background(), "op"); return err }, "GKE refused to roll back", true},
		{"a refused complete", methodPoolComplete, http.StatusBadRequest, func(n *NodePool) error { return n.CompleteUpdate(context.Background(), "op") }, "GKE refused to complete", true},
		{"a failed cancel", methodOperationCancel, http.StatusNotFound, func(n *NodePool) error { return n.CancelUpdate(context.Background(), "op") }, "cannot cancel operation", false},
		{"a failed rollback", methodPoolRollback, http.StatusNotFound, func(n *NodePool) error { _, err := n.RollbackUpdate(context.Background(), "op"); return err }, "cannot roll back", false},
		{"a failed complete", methodPoolComplete, http.StatusNotFound, func(n *NodePool) error { return n.CompleteUpdate(context.Background(), "op") }, "cannot complete the upgrade", false},
		{"a failed progress", methodOperationGet, http.StatusNotFound, func(n *NodePool) error { _, err := n.Progress(context.Background(), "op"); return err }, "cannot get operation", false},
		{"a failed settings read", methodPoolGet, http.StatusForbidden, func(n *NodePool) error { _, err := n.Settings(context.Background()); return err }, "cannot get node pool", false},
		{"a pool gone", methodPoolGet, http.StatusNotFound, func(n *NodePool) error { _, err := n.Settings(context.Background()); return err }, "not found", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeGKE(t)
			np := openPool(t, map[string]string{optNodeVersion: "1.31"})
			f.fail[tc.method] = []int{tc.code}
			err := tc.call(np)
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("want an error with %q, got %v", tc.msg, err)
			}
			if ok := asInput(err); ok != tc.input {
				t.Errorf("%v: the user's to fix %v, want %v", err, ok, tc.input)
			}
		})
	}
}

func asInput(err error) bool {
	var e interface{ Input() bool }
	return errors.As(err, &e) && e.Input()
}

// TestStartUpdateFollowsARunningUpgrade: a second run follows the
// upgrade under way, calling no update.
func TestStartUpdateFollowsARunningUpgrade(t *testing.T) {
	f := newFakeGKE(t)
	np := openPool(t, map[string]string{optNodeVersion: "1.31"})
	f.ops = append(f.ops, &container.Operation{Name: "op-running", OperationType: "UPGRADE_NODES", Status: "RUNNING",
		TargetLink: "https://container.googleapis.com/v1/projects/proj/locations/us-central1/clusters/" + fakeCluster + "/nodePools/" + fakePool})
	id, err := np.StartUpdate(context.Background(), false)
	if err != nil || id != "op-running" || len(f.updates) != 0 {
		t.Errorf("StartUpdate = %q, %v after %d updates; want the running op-running and none", id, err, len(f.updates))
	}
}

// TestRunningUpdateFindsTheUpgrade: the pool's upgrade under way is what
// RunningUpdate names, and none is started; with none, "".
func TestRunningUpdateFindsTheUpgrade(t *testing.T) {
	f := newFakeGKE(t)
	np := openPool(t, map[string]string{optNodeVersion: "1.31"})
	if id, err := np.RunningUpdate(context.Background()); err != nil || id != "" {
		t.Errorf("RunningUpdate = %q, %v with none under way; want \"\"", id, err)
	}
	f.ops = append(f.ops, &container.Operation{Name: "op-running", OperationType: "UPGRADE_NODES", Status: "RUNNING",
		TargetLink: "https://container.googleapis.com/v1/projects/proj/locations/us-central1/clusters/" + fakeCluster + "/nodePools/" + fakePool})
	if id, err := np.RunningUpdate(context.Background()); err != nil || id != "op-running" || len(f.updates) != 0 {
		t.Errorf("RunningUpdate = %q, %v after %d updates; want op-running and none", id, err, len(f.updates))
	}
}

func TestProviderFacts(t *testing.T) {
	f := newFakeGKE(t)
	np := openPool(t, map[string]string{optImageType: "UBUNTU_CONTAINERD"})
	if np.Name() != Name || np.GroupName() != fakePool || !strings.Contains(np.Describe(), fakePool) {
		t.Errorf("name %q, group %q, describe %q", np.Name(), np.GroupName(), np.Describe())
	}
	c := gkeCloud{}
	if c.Help() == "" || !slices.Contains(c.FlagValues(optNodeVersion), "latest") || c.FlagValues(optImageType) != nil {
		t.Errorf("help %q, flag values %v", c.Help(), c.FlagValues(optNodeVersion))
	}
	ubuntu := node("n1", fakePool, "gce://proj/us-central1-a/n1")
	ubuntu.Labels[OSDistributionLabel] = "ubuntu"
	ubuntu.Status.NodeInfo.KubeletVersion = "v1.30.5-gke.1000"
	if got := np.nodeConfigOf(&ubuntu); got != (nodeConfig{Version: "1.30.5-gke.1000", ImageType: "UBUNTU_CONTAINERD"}) {
		t.Errorf("an ubuntu node runs %s", got)
	}
	if osDistribution("WINDOWS_LTSC_CONTAINERD") != "windows" || osDistribution("COS_CONTAINERD") != "cos" {
		t.Errorf("osDistribution")
	}
	cg := np.cloudGroup([]corev1.Node{ubuntu})
	if cg.TargetVersion != "1.30.5-gke.1000/UBUNTU_CONTAINERD" {
		t.Errorf("target %s", cg.TargetVersion)
	}
	var _ cloud.Provider = np
	_ = f
}
