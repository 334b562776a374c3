package e2e

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/vmss"
	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/azurefake"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// The resource group of the e2e scale sets and their marketplace images.
const (
	vmssGroup = "rg-e2e-nodes"
	vmssOld   = "Canonical:ubuntu-24_04-lts:server:24.04.202501010"
	vmssNew   = "Canonical:ubuntu-24_04-lts:server:24.04.202502010"
)

// vmssSet is a scale set of a local Azure endpoint of its own, whose
// instances are kwok nodes of the shared cluster labelled as kOps's
// instance group NAME.
type vmssSet struct {
	name string
	srv  *azurefake.Server
}

// setupVMSS makes a scale set NAME of size instances over three zones on
// vmssOld (computer names PREFIX000000, ...), and apps pinned to it.
func setupVMSS(t *testing.T, name, prefix string, size int, apps ...scenario.App) *vmssSet {
	t.Helper()
	ctx := testContext(t, 3*time.Minute)
	srv, err := azurefake.Start(context.Background(), client, azurefake.Options{PollEvery: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	img, err := vmss.ParseImage(vmssOld)
	if err != nil {
		t.Fatal(err)
	}
	spec := azurefake.ScaleSetSpec{ResourceGroup: vmssGroup, Name: name, ComputerNamePrefix: prefix, Capacity: size,
		Zones: []string{"1", "2", "3"}, Image: img, NodeLabels: map[string]string{kopsKey: name}}
	if err := srv.CreateScaleSet(ctx, spec); err != nil {
		t.Fatal(err)
	}
	s := &vmssSet{name: name, srv: srv}
	var names []string
	for _, n := range s.instances() {
		names = append(names, n.Name)
	}
	if err := scenario.WaitNodesReady(ctx, client, names...); err != nil {
		t.Fatal(err)
	}
	createAppsPinnedBy(t, ctx, kopsKey, name, apps)
	return s
}

// instances are the instances of every scale set of the endpoint.
func (s *vmssSet) instances() []azurefake.ScaleSetInstance {
	var out []azurefake.ScaleSetInstance
	for _, set := range s.srv.ScaleSetNames(vmssGroup) {
		ins, _ := s.srv.ScaleSetInstances(vmssGroup, set)
		out = append(out, ins...)
	}
	return out
}

// run runs the plugin against the endpoint, with no Azure configuration
// of the machine leaking in.
func (s *vmssSet) run(t *testing.T, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, append(args, "--kubeconfig", sim.Kubeconfig)...)
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "AZURE_") || strings.HasPrefix(kv, "NODEUPGRADE_")
	})
	cmd.Env = append(env, "NO_COLOR=1", vmss.EndpointEnv+"="+s.srv.URL, vmss.NoAuthEnv+"=true")
	return runCmd(t, cmd)
}

// TestVMSSStrategiesHonourPDBs upgrades a scale set of 3 nodes in 3
// zones to a new image with surge and with blue/green, Deployments with
// PDBs on it: no PDB is ever violated, every node ends on the new image
// and the scale set's latest model, nothing left cordoned.
func TestVMSSStrategiesHonourPDBs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		strategy, prefix string
		args             []string
		sets             int
	}{
		{"surge", "vmsss", []string{"--max-surge", "1", "--max-unavailable", "0"}, 1},
		{"blue-green", "vmssb", []string{"--batch-node-count", "1", "--node-pool-soak", "0s"}, 1},
	} {
		t.Run(tc.strategy, func(t *testing.T) {
			t.Parallel()
			name := "vmss-" + tc.strategy
			s := setupVMSS(t, name, tc.prefix, 3,
				scenario.App{Name: "web", Replicas: 3, MinAvailable: num(2)},
				scenario.App{Name: "api", Replicas: 2, MaxUnavailable: num(1)})
			ctx := testContext(t, 5*time.Minute)
			watcher, err := scenario.WatchPDBs(ctx, client, name)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			args := append([]string{"run", name, "--strategy", tc.strategy, "--image", vmssNew, "--seed", "4", "--post-drain-wait", "0s", "--yes"}, tc.args...)
			r := s.run(t, args...)
			t.Logf("vmss %s, 3 nodes in 3 zones: run took %s", tc.strategy, time.Since(start).Round(time.Millisecond))
			if r.code != nodeupgrade.ExitOK {
				t.Fatalf("run: %s", r)
			}
			assertNoViolations(t, watcher.Stop())
			s.assertFinished(t, ctx, tc.sets)
		})
	}
}

// assertFinished checks the end of an upgrade to vmssNew: sets scale
// sets, 3 instances on the new image and the latest model, each a node of
// the group, nothing cordoned or tainted, the apps back to full Ready.
func (s *vmssSet) assertFinished(t *testing.T, ctx context.Context, sets int) {
	t.Helper()
	if got := s.srv.ScaleSetNames(vmssGroup); len(got) != sets {
		t.Errorf("scale sets %q, want %d", got, sets)
	}
	ins := s.instances()
	if len(ins) != 3 {
		t.Errorf("%d instances, want 3: %+v", len(ins), ins)
	}
	for _, in := range ins {
		if in.Image != vmssNew || !in.LatestModelApplied || in.State != "Succeeded" {
			t.Errorf("instance %+v: want %s, the latest model, Succeeded", in, vmssNew)
		}
	}
	settle := time.Now().Add(time.Minute)
	for len(groupNodes(t, ctx, kopsKey, s.name)) != 3 && time.Now().Before(settle) {
		time.Sleep(100 * time.Millisecond)
	}
	for _, n := range groupNodes(t, ctx, kopsKey, s.name) {
		if !slices.ContainsFunc(ins, func(in azurefake.ScaleSetInstance) bool { return in.Name == n.Name }) {
			t.Errorf("node %s is no instance of the scale sets: a stale Node object", n.Name)
		}
	}
	assertUntouched(t, ctx, kopsKey, s.name)
	if err := scenario.WaitAppsReady(ctx, client, s.name); err != nil {
		t.Errorf("workloads not back to full Ready: %v", err)
	}
}
