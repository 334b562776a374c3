package gke

import (
	"context"
	"strings"
	"testing"

	container "google.golang.org/api/container/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

func TestSettingsRoundTrip(t *testing.T) {
	two := 2
	for _, tc := range []struct {
		name string
		s    plan.UpdateSettings
	}{
		{"surge", plan.UpdateSettings{Strategy: "SURGE", MaxSurge: &two, MaxUnavailable: "1", Other: map[string]string{}}},
		{"surge with a PDB timeout", plan.UpdateSettings{Strategy: "SURGE", MaxSurge: &two, MaxUnavailable: "0", Other: map[string]string{setPDBTimeout: "20s"}}},
		{"the whole drain config", plan.UpdateSettings{Strategy: "SURGE", MaxSurge: &two, MaxUnavailable: "0",
			Other: map[string]string{setPDBTimeout: "20s", setGraceTerm: "45s", setRespectOnDelete: "true"}}},
		{"blue-green by count", plan.UpdateSettings{Strategy: "BLUE_GREEN", MaxSurge: &two, MaxUnavailable: "0",
			Other: map[string]string{setBatchNodeCount: "0", setBatchSoak: "10s", setPoolSoak: "3600s"}}},
		{"blue-green by percent", plan.UpdateSettings{Strategy: "BLUE_GREEN", MaxSurge: &two, MaxUnavailable: "0",
			Other: map[string]string{setBatchPercentage: "0.5", setBatchSoak: "0s", setPoolSoak: "60s"}}},
		{"autoscaled", plan.UpdateSettings{Strategy: "BLUE_GREEN", MaxSurge: &two, MaxUnavailable: "0", Other: map[string]string{setWaitForDrain: "600s"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up, dc := gkeSettings(tc.s)
			got := settingsOf(&container.NodePool{UpgradeSettings: up, NodeDrainConfig: dc})
			if !got.Equal(tc.s) {
				t.Errorf("round trip: got %s, want %s", got, tc.s)
			}
		})
	}
}

// TestVersionsOfTheReleaseChannel: a cluster on a release channel moves
// its pool to the channel's versions (serverConfig's channels[]
// .validVersions), another to the location's validNodeVersions; a
// channel the server config does not list falls back to the latter.
func TestVersionsOfTheReleaseChannel(t *testing.T) {
	for _, tc := range []struct{ channel, in, want, err string }{
		{"", "1.30", "1.30.5-gke.1000", ""},
		{"REGULAR", "1.30", "1.30.9-gke.1300", ""},
		{"REGULAR", "1.30.5-gke.1000", "", "not offered in release channel REGULAR of us-central1"},
		{"RAPID", "1.30", "1.30.5-gke.1000", ""},
		{"UNSPECIFIED", "1.30", "1.30.5-gke.1000", ""},
	} {
		t.Run(tc.channel+" "+tc.in, func(t *testing.T) {
			f := newFakeGKE(t)
			f.channel = tc.channel
			_, p, err := gkeCloud{}.Open(context.Background(), nil, gkeNodes(), plan.CloudTarget{Options: map[string]string{optNodeVersion: tc.in}})
			switch {
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("want an error with %q, got %v", tc.err, err)
			case tc.err == "" && err != nil:
				t.Fatal(err)
			case tc.err == "" && p.(*NodePool).target.Version != tc.want:
				t.Errorf("target %q, want %q", p.(*NodePool).target.Version, tc.want)
			}
		})
	}
}

func TestResolveVersion(t *testing.T) {
	n := &NodePool{cluster: "c", location: "us-central1", masterVersion: "1.31.2-gke.1000"}
	valid := []string{"1.30.5-gke.1000", "1.31.1-gke.500", "1.31.2-gke.1000", "1.32.1-gke.1000"}
	for _, tc := range []struct{ in, want, err string }{
		{"-", "1.31.2-gke.1000", ""},
		{"latest", "1.31.2-gke.1000", ""},
		{"1.30", "1.30.5-gke.1000", ""},
		{"1.31.1", "1.31.1-gke.500", ""},
		{"1.31", "1.31.2-gke.1000", ""},
		{"1.30.5-gke.1000", "1.30.5-gke.1000", ""},
		{"1.32", "", "above the control plane"},
		{"1.32.1-gke.1000", "", "above the control plane"},
		{"1.29", "", "not offered"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := n.resolveVersion(tc.in, valid)
			switch {
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("want an error with %q, got %v", tc.err, err)
			case tc.err == "" && (err != nil || got != tc.want):
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestOpState(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   container.Operation
		want cloud.UpdateState
	}{
		{"running", container.Operation{Status: "RUNNING"}, cloud.UpdateInProgress},
		{"aborting", container.Operation{Status: "ABORTING"}, cloud.UpdateInProgress},
		{"done", container.Operation{Status: "DONE"}, cloud.UpdateSucceeded},
		{"cancelled", container.Operation{Status: "DONE", Error: &container.Status{Code: 1}}, cloud.UpdateCancelled},
		{"failed", container.Operation{Status: "DONE", Error: &container.Status{Code: 13, Message: "x"}}, cloud.UpdateFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := opState(&tc.op); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
	op := &container.Operation{Progress: &container.OperationProgress{Metrics: []*container.Metric{{Name: "NODES_DONE", IntValue: 2}, {Name: "nodes total", IntValue: 5}}}}
	if d, tot := progressOf(op); d != 2 || tot != 5 {
		t.Errorf("progress %d of %d, want 2 of 5", d, tot)
	}
	failed := &container.Operation{Status: "DONE", Error: &container.Status{Code: 13, Message: "nodes of instance group g did not become ready within 1m"}}
	if e := opError(failed); e.Code != "NodeCreationFailure" {
		t.Errorf("code %q, want NodeCreationFailure", e.Code)
	}
}

func node(name, pool, providerID string) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{NodePoolLabel: pool}}, Spec: corev1.NodeSpec{ProviderID: providerID}}
}

func TestDetectAndPool(t *testing.T) {
	gke := []corev1.Node{node("a", "p1", "gce://proj/us-central1-a/a"), node("b", "p1", "gce://proj/us-central1-b/b")}
	if got := cloud.Detect(gke); got != Name {
		t.Errorf("GKE nodes detected as %q, want %q", got, Name)
	}
	plain := []corev1.Node{node("a", "", "gce://proj/us-central1-a/a")}
	if got := cloud.Detect(plain); got == Name {
		t.Errorf("plain Compute Engine nodes detected as %q", got)
	}
	if p, err := poolOf(gke); err != nil || p != "p1" {
		t.Errorf("pool %q, %v; want p1", p, err)
	}
	if _, err := poolOf(append(gke, node("c", "p2", "gce://proj/us-central1-c/c"))); err == nil || !strings.Contains(err.Error(), "one pool at a time") {
		t.Errorf("two pools: want a refusal, got %v", err)
	}
}

func TestRunsAndValidate(t *testing.T) {
	std := &NodePool{pool: &container.NodePool{Config: &container.NodeConfig{}}}
	flex := &NodePool{pool: &container.NodePool{Config: &container.NodeConfig{FlexStart: true}}}
	queued := &NodePool{pool: &container.NodePool{QueuedProvisioning: &container.QueuedProvisioning{Enabled: true}}}
	for _, s := range []plan.StrategyName{plan.StrategySurge, plan.StrategyBlueGreen, plan.StrategyAutoscaledBlueGreen, plan.StrategyShortLived} {
		if !std.Runs(s) {
			t.Errorf("%s: GKE runs it (or refuses it at plan time)", s)
		}
		if err := std.poolTakes(s); (err == nil) != (s != plan.StrategyShortLived) {
			t.Errorf("%s on a standard pool: %v", s, err)
		}
		for _, p := range []*NodePool{flex, queued} {
			if err := p.poolTakes(s); (err == nil) != (s == plan.StrategyShortLived) {
				t.Errorf("%s on a flex-start or queued pool: %v", s, err)
			}
		}
	}
	if std.Runs("eks") {
		t.Errorf("eks is not GKE's")
	}
	for _, tc := range []struct {
		opts map[string]string
		ok   bool
	}{
		{map[string]string{optNodeVersion: "1.31"}, true},
		{map[string]string{optNodeVersion: "latest"}, true},
		{map[string]string{optNodeVersion: "v1.31"}, false},
		{map[string]string{optImageType: "cos"}, false},
		{map[string]string{optPDBTimeout: "0s"}, false},
		{map[string]string{optPDBTimeout: "90s"}, true},
	} {
		if err := (gkeCloud{}).Validate(plan.CloudTarget{Options: tc.opts}); (err == nil) != tc.ok {
			t.Errorf("Validate(%v) = %v, want ok %v", tc.opts, err, tc.ok)
		}
	}
}

// TestOpErrorNamesTheCode: a failed operation's error is named by its
// google.rpc.Code, whichever it is; capacity (RESOURCE_EXHAUSTED) and
// nodes that never became ready are NodeCreationFailure, a cancel is
// cancelled, not failed.
func TestOpErrorNamesTheCode(t *testing.T) {
	for _, tc := range []struct {
		code  int64
		msg   string
		state cloud.UpdateState
		want  string
	}{
		{1, "Operation was cancelled.", cloud.UpdateCancelled, ""},
		{3, "Invalid node version", cloud.UpdateFailed, "GKE error 3 (INVALID_ARGUMENT)"},
		{7, "Required \"compute.instances.create\" permission", cloud.UpdateFailed, "GKE error 7 (PERMISSION_DENIED)"},
		{8, "Insufficient regional quota", cloud.UpdateFailed, "NodeCreationFailure"},
		{9, "node pool is being deleted", cloud.UpdateFailed, "GKE error 9 (FAILED_PRECONDITION)"},
		{13, "Internal error", cloud.UpdateFailed, "GKE error 13 (INTERNAL)"},
		{14, "nodes did not become ready", cloud.UpdateFailed, "NodeCreationFailure"},
		{42, "a code google.rpc.Code does not list", cloud.UpdateFailed, "GKE error 42"},
	} {
		t.Run(tc.want+tc.msg, func(t *testing.T) {
			op := &container.Operation{Status: "DONE", Error: &container.Status{Code: tc.code, Message: tc.msg}}
			if got := opState(op); got != tc.state {
				t.Fatalf("state %v, want %v", got, tc.state)
			}
			if tc.state != cloud.UpdateFailed {
				return
			}
			if e := opError(op); e.Code != tc.want || e.Message != tc.msg {
				t.Errorf("got %+v, want code %q and the message", e, tc.want)
			}
		})
	}
}
