package conformance

import (
	"context"
	"strings"
	"testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/aks"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/azurefake"
)

// TestAKSSubnetShortOfIPs: a pool of 3 nodes on Azure CNI (maxPods 9: 10
// addresses a node) in a /26 (59 usable) of which others hold 14 and the
// pool 30 has 15 free: a surge of 2 (20 addresses) is refused by plan
// --detailed-exitcode and by run with insufficient-ips naming the subnet,
// needed, free and the surge that fits, with nothing changed; the run with
// that surge finishes. A blue/green plan's green is refused the same way.
func TestAKSSubnetShortOfIPs(t *testing.T) {
	client, srv := aksScene(t)
	ctx := context.Background()
	subnet := srv.CreateSubnet(azurefake.SubnetSpec{ResourceGroup: "net-rg", VNet: "vnet", Name: "small", PrefixBits: 26, OtherUsed: 14})
	if err := srv.SetPoolNetwork("rg", "c1", "pool", azurefake.PoolNetwork{VNetSubnetID: subnet, MaxPods: 9, Plugin: "azure"}); err != nil {
		t.Fatal(err)
	}
	args := func(surge string, more ...string) []string {
		return append([]string{"pool", "--provider", aks.Name, "--node-image", "latest", "--max-surge", surge, "--post-drain-wait", "0s", "--node-ready-timeout", "60s"}, more...)
	}
	out, errOut, code := plugin.Drive(ctx, client, "plan", args("2", "--detailed-exitcode")...)
	for _, want := range []string{"insufficient-ips", `subnet "small" of virtual network "vnet"`, "need 20 IPs", "which has 15 free of its 59", "--max-surge 1 fits"} {
		if code != plugin.ExitBlockers || !strings.Contains(out+errOut, want) {
			t.Fatalf("plan: exit %d, want %d naming %q:\n%s%s", code, plugin.ExitBlockers, want, out, errOut)
		}
	}
	// Green, made with blue's settings on blue's subnet, needs 30.
	bg := []string{"pool", "--provider", aks.Name, "--orchestrator-version", aksControl, "--strategy", "blue-green", "--detailed-exitcode"}
	if out, errOut, code := plugin.Drive(ctx, client, "plan", bg...); code != plugin.ExitBlockers || !strings.Contains(out+errOut, "need 30 IPs") ||
		!strings.Contains(out+errOut, "--strategy surge --max-surge 1 fits") {
		t.Fatalf("blue/green plan: exit %d, want %d naming green's 30 IPs and the surge that fits:\n%s%s", code, plugin.ExitBlockers, out, errOut)
	}
	if out, errOut, code := plugin.Drive(ctx, client, "run", args("2", "--yes")...); code != plugin.ExitBlockers || !strings.Contains(out+errOut, "insufficient-ips") {
		t.Fatalf("run: exit %d, want %d with insufficient-ips:\n%s%s", code, plugin.ExitBlockers, out, errOut)
	}
	if calls := srv.ChangingCalls(); len(calls) != 0 {
		t.Fatalf("a refused run changed the pool: %v", calls)
	}
	if out, errOut, code := plugin.Drive(ctx, client, "run", args("1", "--yes")...); code != plugin.ExitOK {
		t.Fatalf("run with the surge that fits: exit %d:\n%s%s", code, out, errOut)
	}
	if p, _ := srv.Pool("rg", "c1", "pool"); *p.Properties.NodeImageVersion != aksLatest || *p.Properties.ProvisioningState != "Succeeded" {
		t.Fatalf("pool %s on %s, want Succeeded on %s", *p.Properties.ProvisioningState, *p.Properties.NodeImageVersion, aksLatest)
	}
}
