package aks

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"

	armcs "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// isInput reports whether err is one the user fixes (exit 2).
func isInput(err error) bool {
	var in interface{ Input() bool }
	return errors.As(err, &in) && in.Input()
}

func ptrTo[T any](v T) *T { return &v }

// blueOf is a PoolBlueGreen over a pool model alone (no Azure calls).
func blueOf(name string, props armcs.ManagedClusterAgentPoolProfileProperties) *PoolBlueGreen {
	return &PoolBlueGreen{blue: &AgentPool{name: name, id: clusterID{name: "c1", group: "rg"}, pool: armcs.AgentPool{Name: &name, Properties: &props}}}
}

// poolName is AKS's rule for a pool name (create-node-pools#limitations).
var poolName = regexp.MustCompile(`^[a-z][a-z0-9]*$`)

func TestGreenName(t *testing.T) {
	const v1, v2 = "1.32.2/AKSUbuntu-2204gen2containerd-202502.01.0", "1.32.2/AKSUbuntu-2204gen2containerd-202503.01.0"
	for _, tc := range []struct {
		name    string
		blue    string
		os      armcs.OSType
		tags    map[string]*string
		limit   int
		wantPfx string
	}{
		{name: "short linux pool keeps its name", blue: "pool", os: armcs.OSTypeLinux, limit: 12, wantPfx: "pool"},
		{name: "12-character linux pool is shortened to 8", blue: "nodepool1234", os: armcs.OSTypeLinux, limit: 12, wantPfx: "nodepool"},
		{name: "windows pool within 6", blue: "win123", os: armcs.OSTypeWindows, limit: 6, wantPfx: "wi"},
		{name: "a green is named after its blue's base", blue: "poolk3x9", os: armcs.OSTypeLinux, tags: map[string]*string{TagBlue: ptrTo("pool")}, limit: 12, wantPfx: "pool"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := blueOf(tc.blue, armcs.ManagedClusterAgentPoolProfileProperties{OSType: &tc.os, Tags: tc.tags})
			g1, g2 := b.GreenName(v1), b.GreenName(v2)
			for _, g := range []string{g1, g2} {
				if len(g) > tc.limit || !poolName.MatchString(g) || !strings.HasPrefix(g, tc.wantPfx) || g == tc.blue {
					t.Errorf("green %q of %q: want at most %d lowercase letters and digits from a letter, starting %q, not blue's", g, tc.blue, tc.limit, tc.wantPfx)
				}
			}
			if g1 == g2 || g1 != b.GreenName(v1) {
				t.Errorf("greens %q and %q of two targets: want distinct, and the same for the same target", g1, g2)
			}
		})
	}
}

// TestGreenPool: green is blue's document as read at poolAPIVersion,
// every field kept, those the SDK's model lacks included (maxUnavailable,
// undrainableNodeBehavior, a field newer than the model), less the
// read-only fields a PUT must not carry and blue's snapshot; blue's
// document is left as it was.
func TestGreenPool(t *testing.T) {
	const blueJSON = `{"id":"/subscriptions/sub/resourceGroups/rg/providers/Microsoft.ContainerService/managedClusters/c1/agentPools/pool","name":"pool","type":"Microsoft.ContainerService/managedClusters/agentPools",
	"properties":{"count":3,"vmSize":"Standard_D4s_v5","osType":"Linux","mode":"User","orchestratorVersion":"1.31.5","currentOrchestratorVersion":"1.31.5",
	"nodeImageVersion":"old","provisioningState":"Succeeded","eTag":"e1","powerState":{"code":"Running"},"creationData":{"sourceResourceId":"snapshot"},
	"nodeLabels":{"pool":"pool"},"nodeTaints":["dedicated=web:NoSchedule"],"maxPods":50,"vnetSubnetID":"subnet",
	"upgradeSettings":{"maxSurge":"33%","maxUnavailable":"1","undrainableNodeBehavior":"Cordon"},"aFieldNewerThanTheModel":{"kept":true},"tags":{"team":"web"}}}`
	var blue map[string]any
	if err := json.Unmarshal([]byte(blueJSON), &blue); err != nil {
		t.Fatal(err)
	}
	before := cloneDoc(blue)
	marks := blueOf("pool", armcs.ManagedClusterAgentPoolProfileProperties{}).marks()
	for _, tc := range []struct {
		name  string
		sizes plan.Sizes
		want  string // properties as JSON, compared whole
	}{
		{"fixed count", plan.Sizes{Min: 3, Desired: 3, Max: 3},
			`{"aFieldNewerThanTheModel":{"kept":true},"count":3,"maxPods":50,"mode":"User","nodeLabels":{"pool":"pool"},"nodeTaints":["dedicated=web:NoSchedule"],"orchestratorVersion":"1.32.2","osType":"Linux","tags":{"nodeupgrade-blue":"pool","nodeupgrade-role":"green","team":"web"},"upgradeSettings":{"maxSurge":"33%","maxUnavailable":"1","undrainableNodeBehavior":"Cordon"},"vmSize":"Standard_D4s_v5","vnetSubnetID":"subnet"}`},
		{"autoscaled", plan.Sizes{Min: 1, Desired: 3, Max: 5},
			`{"aFieldNewerThanTheModel":{"kept":true},"count":3,"enableAutoScaling":true,"maxCount":5,"maxPods":50,"minCount":1,"mode":"User","nodeLabels":{"pool":"pool"},"nodeTaints":["dedicated=web:NoSchedule"],"orchestratorVersion":"1.32.2","osType":"Linux","tags":{"nodeupgrade-blue":"pool","nodeupgrade-role":"green","team":"web"},"upgradeSettings":{"maxSurge":"33%","maxUnavailable":"1","undrainableNodeBehavior":"Cordon"},"vmSize":"Standard_D4s_v5","vnetSubnetID":"subnet"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := greenPool(blue, "poolab12", "1.32.2/new", tc.sizes, marks)
			props, _ := json.Marshal(g["properties"])
			if g["name"] != "poolab12" || g["id"] != nil || g["type"] != nil || string(props) != tc.want {
				t.Errorf("green %v %s\nwant properties %s", g["name"], props, tc.want)
			}
			if !reflect.DeepEqual(blue, before) {
				t.Errorf("greenPool changed blue's document: %v", blue)
			}
		})
	}
}

func TestPoolSizes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		props armcs.ManagedClusterAgentPoolProfileProperties
		want  plan.Sizes
	}{
		{"count", armcs.ManagedClusterAgentPoolProfileProperties{Count: ptrTo(int32(3))}, plan.Sizes{Min: 3, Desired: 3, Max: 3}},
		{"autoscaler off keeps count", armcs.ManagedClusterAgentPoolProfileProperties{Count: ptrTo(int32(3)), EnableAutoScaling: ptrTo(false), MinCount: ptrTo(int32(1)), MaxCount: ptrTo(int32(9))}, plan.Sizes{Min: 3, Desired: 3, Max: 3}},
		{"autoscaler", armcs.ManagedClusterAgentPoolProfileProperties{Count: ptrTo(int32(3)), EnableAutoScaling: ptrTo(true), MinCount: ptrTo(int32(1)), MaxCount: ptrTo(int32(9))}, plan.Sizes{Min: 1, Desired: 3, Max: 9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := poolSizes(&tc.props); got != tc.want {
				t.Errorf("sizes %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestOwnGreen(t *testing.T) {
	b := blueOf("pool", armcs.ManagedClusterAgentPoolProfileProperties{})
	for _, tc := range []struct {
		name    string
		tags    map[string]*string
		state   string
		wantErr string
	}{
		{name: "ours", tags: b.marks(), state: "Creating"},
		{name: "ours, failed", tags: b.marks(), state: "Failed"},
		{name: "someone else's", tags: map[string]*string{"team": ptrTo("x")}, state: "Succeeded", wantErr: "is not a green pool of"},
		{name: "another blue's green", tags: map[string]*string{TagBlue: ptrTo("other"), TagRole: ptrTo(RoleGreen)}, state: "Succeeded", wantErr: "is not a green pool of"},
		{name: "ours, being deleted", tags: b.marks(), state: "Deleting", wantErr: "is being deleted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := b.ownGreen(&armcs.AgentPool{Name: ptrTo("poolab12"), Properties: &armcs.ManagedClusterAgentPoolProfileProperties{Tags: tc.tags, ProvisioningState: &tc.state}})
			if (err == nil) != (tc.wantErr == "") || err != nil && (!strings.Contains(err.Error(), tc.wantErr) || !isInput(err)) {
				t.Errorf("ownGreen: %v, want an input error with %q", err, tc.wantErr)
			}
		})
	}
}

// TestOpenBlueGreenRefuses: what green cannot be made with is refused
// before any call to Azure.
func TestOpenBlueGreenRefuses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		props   armcs.ManagedClusterAgentPoolProfileProperties
		opts    map[string]string
		wantErr string
	}{
		{name: "AKS's drain timeout", opts: map[string]string{optDrainTimeout: "5m"}, wantErr: "--aks-drain-timeout"},
		{name: "autoscaled pool", props: armcs.ManagedClusterAgentPoolProfileProperties{EnableAutoScaling: ptrTo(true), MinCount: ptrTo(int32(1)), MaxCount: ptrTo(int32(5))}, wantErr: "cluster autoscaler"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := blueOf("pool", tc.props)
			_, _, err := openBlueGreen(context.Background(), b.blue, nil, plan.CloudTarget{Strategy: plan.StrategyBlueGreen, Options: tc.opts})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !isInput(err) || strings.Contains(err.Error(), "\n") {
				t.Errorf("open: %v, want a one-line input error naming %q", err, tc.wantErr)
			}
		})
	}
}

// TestBelow: a minor version names its patches; a re-run of
// --orchestrator-version 1.32 on a pool at 1.32.2 (a blue/green green,
// or a pool AKS upgraded) is no downgrade.
func TestBelow(t *testing.T) {
	for _, tc := range []struct {
		v, cur string
		want   bool
	}{
		{"1.32", "1.32.2", false},
		{"1.32.2", "1.32.2", false},
		{"1.32.1", "1.32.2", true},
		{"1.31", "1.32.2", true},
		{"1.33", "1.32.2", false},
	} {
		if got := below(tc.v, tc.cur); got != tc.want {
			t.Errorf("below(%s, %s) = %v, want %v", tc.v, tc.cur, got, tc.want)
		}
	}
}
