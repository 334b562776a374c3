package vmss

import (
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const instanceID = "azure:///subscriptions/s1/resourceGroups/rg/providers/Microsoft.Compute/virtualMachineScaleSets/ng/virtualMachines/3"

func TestClaimsNoAKSNode(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   bool
	}{
		{"self-managed", map[string]string{"kops.k8s.io/instancegroup": "ng"}, true},
		{"AKS agent pool", map[string]string{aksAgentPoolLabel: "pool1"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: tc.labels}, Spec: corev1.NodeSpec{ProviderID: instanceID}}
			if got := (vmssCloud{}).Claims(n); got != tc.want {
				t.Errorf("Claims = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParseImage(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"Canonical:ubuntu-24_04-lts:server:24.04.202502010", "Canonical:ubuntu-24_04-lts:server:24.04.202502010", true},
		{"/subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/galleries/gal/images/node/versions/1.2.3", "/subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/galleries/gal/images/node/versions/1.2.3", true},
		{"/SharedGalleries/abc/Images/node/Versions/1.0.0", "/SharedGalleries/abc/Images/node/Versions/1.0.0", true},
		{"Canonical:ubuntu::1", "", false},
		{"ubuntu", "", false},
		{"/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/virtualNetworks/v", "", false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			r, err := ParseImage(tc.in)
			if (err == nil) != tc.ok || tc.ok && ImageString(&r) != tc.want {
				t.Errorf("ParseImage = %q, %v; want %q ok %v", ImageString(&r), err, tc.want, tc.ok)
			}
		})
	}
}

func TestGreenNames(t *testing.T) {
	long := strings.Repeat("a", 64)
	for _, tc := range []struct{ blue, prefix string }{{"ng", "ng"}, {long, "nodepoolx"}} {
		t.Run(tc.blue[:2], func(t *testing.T) {
			g := greenName(tc.blue, "v2")
			if len(g) > 64 || !scaleSetName.MatchString(g) || g == tc.blue {
				t.Errorf("green %q of %q is no new scale set name", g, tc.blue)
			}
			if again := greenName(g, "v3"); len(again) != len(g) && len(g) < 64 {
				t.Errorf("a green of green %q grew to %q", g, again)
			}
			for _, limit := range []int{maxPrefix, maxWindowsPrefix} {
				p := greenPrefix(tc.prefix, "v2", limit)
				if len(p) > limit || p == tc.prefix || greenPrefix(p, "v3", limit) == p || len(greenPrefix(p, "v3", limit)) > limit {
					t.Errorf("green prefix %q of %q: want at most %d characters, new each version", p, tc.prefix, limit)
				}
			}
		})
	}
}

func TestGreenModel(t *testing.T) {
	img := armcompute.ImageReference{Publisher: to.Ptr("p"), Offer: to.Ptr("o"), SKU: to.Ptr("s"), Version: to.Ptr("1")}
	blue := &armcompute.VirtualMachineScaleSet{ID: to.Ptr("/subscriptions/s/resourceGroups/RG/providers/Microsoft.Compute/virtualMachineScaleSets/ng"),
		Name: to.Ptr("ng"), Location: to.Ptr("westeurope"), SKU: &armcompute.SKU{Name: to.Ptr("Standard_D4s_v5"), Capacity: to.Ptr(int64(3))},
		Properties: &armcompute.VirtualMachineScaleSetProperties{ProvisioningState: to.Ptr("Succeeded"), UniqueID: to.Ptr("u"),
			VirtualMachineProfile: &armcompute.VirtualMachineScaleSetVMProfile{UserData: to.Ptr("boot"),
				OSProfile:      &armcompute.VirtualMachineScaleSetOSProfile{ComputerNamePrefix: to.Ptr("ng")},
				StorageProfile: &armcompute.VirtualMachineScaleSetStorageProfile{ImageReference: &img}}}}
	target, _ := ParseImage("p:o:s:2")
	g, err := greenModel(blue, "ng-g123456", target, 2)
	if err != nil {
		t.Fatal(err)
	}
	prof := g.Properties.VirtualMachineProfile
	switch {
	case ImageString(prof.StorageProfile.ImageReference) != "p:o:s:2" || ImageString(&img) != "p:o:s:1":
		t.Errorf("green's image %q, blue's %q: want p:o:s:2 and blue's untouched", ImageString(prof.StorageProfile.ImageReference), ImageString(&img))
	case *g.SKU.Capacity != 2 || *blue.SKU.Capacity != 3:
		t.Errorf("capacity %d (blue %d), want 2 (3)", *g.SKU.Capacity, *blue.SKU.Capacity)
	case *prof.OSProfile.ComputerNamePrefix == "ng" || *blue.Properties.VirtualMachineProfile.OSProfile.ComputerNamePrefix != "ng":
		t.Errorf("green's computer name prefix %q: want its own, blue's kept", *prof.OSProfile.ComputerNamePrefix)
	case str(prof.UserData) != "boot" || g.Properties.ProvisioningState != nil || g.Properties.UniqueID != nil || g.ID != nil:
		t.Errorf("green's model %+v: want blue's userData, none of what Compute sets", g.Properties)
	case str(g.Tags[GreenTag]) != strings.ToLower(*blue.ID):
		t.Errorf("green's tag %q, want blue's ID", str(g.Tags[GreenTag]))
	}
	if _, err := greenModel(blue, "bad name", target, 2); err == nil {
		t.Error("a green name with a space was taken")
	}
}

func TestCheckModelRefusesWhatUpdatesItself(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode armcompute.UpgradeMode
		orch armcompute.OrchestrationMode
		ok   bool
	}{
		{"manual", armcompute.UpgradeModeManual, armcompute.OrchestrationModeUniform, true},
		{"automatic", armcompute.UpgradeModeAutomatic, armcompute.OrchestrationModeUniform, false},
		{"rolling", armcompute.UpgradeModeRolling, armcompute.OrchestrationModeUniform, false},
		{"flexible", armcompute.UpgradeModeManual, armcompute.OrchestrationModeFlexible, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &armcompute.VirtualMachineScaleSet{Name: to.Ptr("ng"), SKU: &armcompute.SKU{Capacity: to.Ptr(int64(1))},
				Properties: &armcompute.VirtualMachineScaleSetProperties{UpgradePolicy: &armcompute.UpgradePolicy{Mode: to.Ptr(tc.mode)}, OrchestrationMode: to.Ptr(tc.orch),
					VirtualMachineProfile: &armcompute.VirtualMachineScaleSetVMProfile{StorageProfile: &armcompute.VirtualMachineScaleSetStorageProfile{}}}}
			if err := checkModel(m); (err == nil) != tc.ok {
				t.Errorf("checkModel: %v, want ok %v", err, tc.ok)
			}
		})
	}
}

func TestVictims(t *testing.T) {
	vm := func(id, image, state string, latest bool) instance {
		return instance{set: "ng", vm: &armcompute.VirtualMachineScaleSetVM{InstanceID: to.Ptr(id), Properties: &armcompute.VirtualMachineScaleSetVMProperties{
			ProvisioningState: to.Ptr(state), LatestModelApplied: to.Ptr(latest),
			StorageProfile: &armcompute.StorageProfile{ImageReference: &armcompute.ImageReference{ID: to.Ptr(image)}}}}}
	}
	ins := []instance{
		vm("1", "/new", "Succeeded", true),
		vm("2", "/old", "Succeeded", false),
		vm("3", "/new", "Creating", true),
		vm("4", "/old", "Deleting", false),
		vm("5", "/new", "Succeeded", true),
	}
	for _, tc := range []struct {
		n    int
		want string
	}{{1, "2"}, {2, "2,3"}, {3, "2,3,5"}, {9, "2,3,5,1"}} {
		t.Run(tc.want, func(t *testing.T) {
			if got := strings.Join(victims(ins, "/new", tc.n), ","); got != tc.want {
				t.Errorf("victims(%d) = %s, want %s", tc.n, got, tc.want)
			}
		})
	}
	if m := machine(ins[1]); m.Version != "/old"+staleModel || (&ScaleSet{}).Current(m, "/old") {
		t.Errorf("an instance of an older model: %+v, want outdated", m)
	}
}

// TestGreenPrefixByOS: green's computer name prefix fits what the model's
// OS takes: 15 characters, 9 for Windows (a windowsConfiguration, or a
// Windows OS disk), whose computer names add six of the instance's.
func TestGreenPrefixByOS(t *testing.T) {
	img := armcompute.ImageReference{Publisher: to.Ptr("p"), Offer: to.Ptr("o"), SKU: to.Ptr("s"), Version: to.Ptr("1")}
	windows := armcompute.OperatingSystemTypesWindows
	for _, tc := range []struct {
		name  string
		os    armcompute.VirtualMachineScaleSetOSProfile
		disk  *armcompute.VirtualMachineScaleSetOSDisk
		limit int
	}{
		{"Linux", armcompute.VirtualMachineScaleSetOSProfile{LinuxConfiguration: &armcompute.LinuxConfiguration{}}, nil, 15},
		{"Windows configuration", armcompute.VirtualMachineScaleSetOSProfile{WindowsConfiguration: &armcompute.WindowsConfiguration{}}, nil, 9},
		{"Windows OS disk", armcompute.VirtualMachineScaleSetOSProfile{}, &armcompute.VirtualMachineScaleSetOSDisk{OSType: &windows}, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.os.ComputerNamePrefix = to.Ptr("nodepoolx")
			blue := &armcompute.VirtualMachineScaleSet{ID: to.Ptr("/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachineScaleSets/ng"),
				Name: to.Ptr("ng"), SKU: &armcompute.SKU{Name: to.Ptr("Standard_D4s_v5")},
				Properties: &armcompute.VirtualMachineScaleSetProperties{VirtualMachineProfile: &armcompute.VirtualMachineScaleSetVMProfile{
					OSProfile: &tc.os, StorageProfile: &armcompute.VirtualMachineScaleSetStorageProfile{ImageReference: &img, OSDisk: tc.disk}}}}
			target, _ := ParseImage("p:o:s:2")
			g, err := greenModel(blue, "ng-g123456", target, 2)
			if err != nil {
				t.Fatal(err)
			}
			if p := *g.Properties.VirtualMachineProfile.OSProfile.ComputerNamePrefix; len(p) > tc.limit || p == "nodepoolx" {
				t.Errorf("green's prefix %q: want a new one of at most %d characters", p, tc.limit)
			}
		})
	}
}
