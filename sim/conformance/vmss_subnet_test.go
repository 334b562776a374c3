package conformance

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/azurefake"
)

// TestVMSSPlanRefusesASurgeOverTheSubnet: the scale set's instances take
// two addresses each (two IP configurations) of a /28 (11 usable) of
// which others hold 5 and its 2 instances 4: a surge of 2 (4 addresses,
// 2 free) is refused by plan --detailed-exitcode with insufficient-ips
// naming the subnet and the surge that fits, the model as it was.
func TestVMSSPlanRefusesASurgeOverTheSubnet(t *testing.T) {
	client, srv := vmssScene(t)
	subnet := srv.CreateSubnet(azurefake.SubnetSpec{ResourceGroup: "net-rg", VNet: "vnet", Name: "tiny", PrefixBits: 28, OtherUsed: 5})
	if err := srv.SetScaleSetSubnet(vmssGroup, "ng", subnet, 2); err != nil {
		t.Fatal(err)
	}
	before := srv.ScaleSetModel(vmssGroup, "ng")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, errOut, code := plugin.Drive(ctx, client, "plan", vmssArgs("surge", "--max-surge", "2", "--detailed-exitcode")...)
	for _, want := range []string{"insufficient-ips", `subnet "tiny" of virtual network "vnet"`, "need 4 IPs", "which has 2 free of its 11", "--max-surge 1 fits"} {
		if code != plugin.ExitBlockers || !strings.Contains(out+errOut, want) {
			t.Fatalf("plan: exit %d, want %d naming %q:\n%s%s", code, plugin.ExitBlockers, want, out, errOut)
		}
	}
	if after := srv.ScaleSetModel(vmssGroup, "ng"); after != before {
		t.Errorf("the plan changed the scale set: %s, was %s", after, before)
	}
	if out, errOut, code := plugin.Drive(ctx, client, "plan", vmssArgs("surge", "--max-surge", "1", "--detailed-exitcode")...); code != plugin.ExitOK {
		t.Errorf("plan of the surge that fits: exit %d, want %d:\n%s%s", code, plugin.ExitOK, out, errOut)
	}
}
