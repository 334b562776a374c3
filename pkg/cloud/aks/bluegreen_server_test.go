package aks

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// TestBlueGreenOnTheServer: a blue/green run's calls on the pools: green
// created by a PUT of blue's settings at the target's version, waited for
// until AKS reports it Succeeded, adopted by a re-run, never resized,
// its nodes counted once named; blue deleted, and a deleted pool stays
// deleted. Green keeps blue's fields the SDK's model lacks.
func TestBlueGreenOnTheServer(t *testing.T) {
	f := newAKSServer(t)
	newer := map[string]any{"maxSurge": "10%", "maxUnavailable": "1", "undrainableNodeBehavior": "Cordon"}
	f.addPool("pool", 2, map[string]any{"upgradeSettings": newer, "aFieldNewerThanTheModel": map[string]any{"kept": true}})
	cg, p, kube, err := openPool(t, "pool", 2, plan.StrategyBlueGreen, map[string]string{optVersion: "1.32.2"})
	if err != nil {
		t.Fatal(err)
	}
	b := p.(*PoolBlueGreen)
	ctx := context.Background()
	if cg.Managed != nil || cg.Green == "" || cg.GreenLabel != AgentPoolLabel || b.Name() != Name || b.GroupName() != "pool" || !strings.Contains(b.Describe(), `"pool"`) {
		t.Fatalf("group %+v", cg)
	}
	if perms, err := b.ProbePermissions(ctx); err != nil || len(perms.Missing) != 0 {
		t.Errorf("ProbePermissions with Owner: %+v, %v", perms, err)
	}
	target, err := b.PrepareTarget(ctx)
	if err != nil || target != cg.TargetVersion || b.CheckQuota(ctx) != nil {
		t.Fatalf("PrepareTarget %q, %v", target, err)
	}
	for range 2 {
		if err := b.CreateGreen(ctx, cg.Green, target, plan.Sizes{Min: 2, Desired: 2, Max: 2}); err != nil {
			t.Fatal(err)
		}
	}
	if got := f.writes(); !slices.Equal(got, []string{"PUT " + cg.Green}) {
		t.Errorf("writes %v, want one PUT of green", got)
	}
	g := f.props(cg.Green)
	if g["orchestratorVersion"] != "1.32.2" || g["vmSize"] != "Standard_D4s_v5" || g["provisioningState"] != stateSucceeded {
		t.Errorf("green %v", g)
	}
	if !reflect.DeepEqual(g["upgradeSettings"], newer) || !reflect.DeepEqual(g["aFieldNewerThanTheModel"], map[string]any{"kept": true}) {
		t.Errorf("green %v: want blue's upgradeSettings %v and its field newer than the SDK's model", g, newer)
	}
	if sz, err := b.Sizes(ctx); err != nil || sz != (plan.Sizes{Min: 2, Desired: 2, Max: 2}) {
		t.Errorf("Sizes %+v, %v", sz, err)
	}
	if err := b.SetGroupSizes(ctx, cg.Green, plan.Sizes{Min: 2, Desired: 2, Max: 2}); err != nil {
		t.Errorf("SetGroupSizes to the sizes it has: %v", err)
	}
	if err := b.SetGroupSizes(ctx, cg.Green, plan.Sizes{Desired: 3, Max: 3}); err == nil || !strings.Contains(err.Error(), "never scales a pool") {
		t.Errorf("SetGroupSizes to others: %v", err)
	}
	green := poolNode(cg.Green, 0, "1.32.2", testLatestImage)
	nodes := []*corev1.Node{&green}
	for _, n := range must(kube.CoreV1().Nodes().List(ctx, metaList)).Items {
		nodes = append(nodes, &n)
	}
	if byNode, _, _ := b.Machines(ctx, nodes); len(byNode) != 2 {
		t.Errorf("Machines before UseGreen: %v, want blue's 2", byNode)
	}
	b.UseGreen(cg.Green)
	byNode, _, _ := b.Machines(ctx, nodes)
	if m := byNode[green.Name]; len(byNode) != 3 || !b.Current(m, "1.32.2/"+testLatestImage) {
		t.Errorf("Machines after UseGreen: %v", byNode)
	}
	for range 2 {
		if err := b.DeleteGroup(ctx, "pool"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.GroupSizes(ctx, "pool"); !errors.Is(err, cloud.ErrGroupNotFound) {
		t.Errorf("GroupSizes of deleted blue: %v", err)
	}
}

// TestCreateGreenRefusesAnotherPool: a pool of green's name that is no
// green of blue's is refused, before and after Open, with nothing sent.
func TestCreateGreenRefusesAnotherPool(t *testing.T) {
	f := newAKSServer(t)
	f.addPool("pool", 2, nil)
	cg, p, _, err := openPool(t, "pool", 2, plan.StrategyBlueGreen, map[string]string{optVersion: "1.32.2"})
	if err != nil {
		t.Fatal(err)
	}
	f.addPool(cg.Green, 1, nil)
	err = p.(*PoolBlueGreen).CreateGreen(context.Background(), cg.Green, cg.TargetVersion, plan.Sizes{Desired: 2, Max: 2})
	if err == nil || !strings.Contains(err.Error(), "is not a green pool of") || len(f.writes()) != 0 {
		t.Errorf("CreateGreen over another pool: %v, writes %v", err, f.writes())
	}
	if _, _, _, err := openPool(t, "pool", 2, plan.StrategyBlueGreen, map[string]string{optVersion: "1.32.2"}); err == nil || !strings.Contains(err.Error(), "is not a green pool of") {
		t.Errorf("Open with another pool of green's name: %v", err)
	}
}

// TestRegisteredFlags: the provider's flags, completion and help, and
// Validate's refusals of what no AKS pool takes.
func TestRegisteredFlags(t *testing.T) {
	b := cloud.BoundFlags()
	for _, flag := range []string{optCluster, optResourceGroup, optVersion, optImage, optDrainTimeout} {
		if !slices.Contains(b.Owners[flag], Name) {
			t.Errorf("flag --%s not bound for %s: %v", flag, Name, b.Owners[flag])
		}
	}
	c := aksCloud{}
	if !slices.Equal(c.FlagValues(optImage), []string{"latest"}) || c.FlagValues(optVersion) != nil || c.Help() == "" ||
		!c.Owns(poolNode("pool", 0, "1.31.5", "").Spec.ProviderID) || c.Owns("aws:///us-east-1a/i-1") || c.NodeGroupLabels()[0] != AgentPoolLabel {
		t.Error("the provider's completion, help or ownership")
	}
	for _, tc := range []struct {
		opts map[string]string
		want string
	}{
		{map[string]string{optVersion: "1.32", optDrainTimeout: "30m"}, ""},
		{map[string]string{optVersion: "v1.32"}, "invalid --orchestrator-version"},
		{map[string]string{optImage: "latest image"}, "invalid --node-image"},
		{map[string]string{optVersion: "1.32", optImage: "latest"}, "both given"},
		{map[string]string{optDrainTimeout: "0m"}, "invalid --aks-drain-timeout"},
	} {
		err := c.Validate(plan.CloudTarget{Options: tc.opts})
		if (err == nil) != (tc.want == "") || err != nil && (!strings.Contains(err.Error(), tc.want) || !isInput(err)) {
			t.Errorf("Validate(%v) = %v, want %q", tc.opts, err, tc.want)
		}
	}
}
