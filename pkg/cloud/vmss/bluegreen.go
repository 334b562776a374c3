package vmss

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// GreenTag is the tag of a green scale set whose value is blue's resource
// ID (lower case): a re-run recognises its own green by it and adopts no
// other.
const GreenTag = "kubectl-nodeupgrade-green-of"

// PrepareTarget implements cloud.BlueGreen: the target is an image, which
// exists already; nothing is made.
func (s *ScaleSet) PrepareTarget(context.Context) (string, error) { return ImageString(&s.target), nil }

// CheckQuota implements cloud.BlueGreen. A second scale set costs no
// quota of its own that the run can read before it creates it: Compute's
// limits that green meets are the region's vCPUs, which a failed
// creation names (the creation fails before any node is drained).
func (s *ScaleSet) CheckQuota(context.Context) error { return nil }

// greenSuffix is what greenName appends: "-g" and 6 hex digits.
var greenSuffix = regexp.MustCompile(`-g[0-9a-f]{6}$`)

// GreenName implements cloud.BlueGreen: blue's name without the green
// suffix of an earlier blue/green run (so names do not grow run after
// run), "-g" and a hash of the version, cut to the 64 characters a scale
// set's name may have.
func (s *ScaleSet) GreenName(version string) string { return greenName(s.name, version) }

func greenName(blue, version string) string {
	blue = greenSuffix.ReplaceAllString(blue, "")
	suffix := "-g" + shortHash(version, 3)
	return blue[:min(len(blue), 64-len(suffix))] + suffix
}

// greenPrefixSuffix is what greenPrefix appends: "g" and 6 hex digits.
var greenPrefixSuffix = regexp.MustCompile(`g[0-9a-f]{6}$`)

// Computer name prefixes' longest: 15 ("Computer name prefixes must be
// 1 to 15 characters long", armcompute
// VirtualMachineScaleSetOSProfile.ComputerNamePrefix), 9 for Windows,
// whose computer names, the prefix and six characters of the instance,
// are at most 15 (https://learn.microsoft.com/en-us/azure/azure-resource-manager/management/resource-name-rules#microsoftcompute:
// computer name prefix "Windows: 1-9").
const (
	maxPrefix        = 15
	maxWindowsPrefix = 9
)

// greenPrefix is green's computerNamePrefix: blue's, cut, with "g" and a
// hash of the version, at most limit characters (maxPrefix, or
// maxWindowsPrefix): green's computer names, its nodes' names, must not
// be blue's.
func greenPrefix(blue, version string, limit int) string {
	blue = greenPrefixSuffix.ReplaceAllString(blue, "")
	key := "g" + shortHash(version, 3)
	return blue[:min(len(blue), max(limit-len(key), 0))] + key
}

// prefixLimit is the longest computerNamePrefix the model's OS takes: a
// model with a windowsConfiguration, or a Windows OS disk, is Windows.
func prefixLimit(prof *armcompute.VirtualMachineScaleSetVMProfile) int {
	if prof.OSProfile != nil && prof.OSProfile.WindowsConfiguration != nil {
		return maxWindowsPrefix
	}
	if sp := prof.StorageProfile; sp != nil && sp.OSDisk != nil && sp.OSDisk.OSType != nil && *sp.OSDisk.OSType == armcompute.OperatingSystemTypesWindows {
		return maxWindowsPrefix
	}
	return maxPrefix
}

// shortHash is the first n bytes of s's SHA-256, in hex.
func shortHash(s string, n int) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:n])
}

// greenModel is the model of green: blue's (its userData, which boots the
// kubelets, with it), with the target image, its own name's computer name
// prefix, capacity and the green tag; without what Compute sets itself.
// It is checked before anything is written.
func greenModel(blue *armcompute.VirtualMachineScaleSet, name string, image armcompute.ImageReference, capacity int64) (armcompute.VirtualMachineScaleSet, error) {
	if !scaleSetName.MatchString(name) {
		return armcompute.VirtualMachineScaleSet{}, fmt.Errorf("cannot create green scale set %q: not a scale set name (1 to 64 letters, digits, '-', '_' or '.')", name)
	}
	props := *blue.Properties
	props.ProvisioningState, props.UniqueID, props.TimeCreated = nil, nil, nil
	prof := *props.VirtualMachineProfile
	prof.TimeCreated = nil
	sp, os := *prof.StorageProfile, armcompute.VirtualMachineScaleSetOSProfile{}
	if prof.OSProfile != nil {
		os = *prof.OSProfile
	}
	img := image
	img.ExactVersion = nil
	sp.ImageReference, os.ComputerNamePrefix = &img, to.Ptr(greenPrefix(str(os.ComputerNamePrefix), ImageString(&image), prefixLimit(&prof)))
	prof.StorageProfile, prof.OSProfile, props.VirtualMachineProfile = &sp, &os, &prof
	tags := map[string]*string{}
	for k, v := range blue.Tags {
		tags[k] = v
	}
	tags[GreenTag] = to.Ptr(strings.ToLower(str(blue.ID)))
	m := armcompute.VirtualMachineScaleSet{Location: blue.Location, ExtendedLocation: blue.ExtendedLocation, Identity: blue.Identity,
		Plan: blue.Plan, Placement: blue.Placement, Zones: blue.Zones, Tags: tags, Properties: &props,
		SKU: &armcompute.SKU{Name: blue.SKU.Name, Tier: blue.SKU.Tier, Capacity: to.Ptr(capacity)}}
	return m, nil
}

// CreateGreen implements cloud.BlueGreen: beside blue, in its resource
// group, a scale set from blue's model launching version with the given
// capacity, or the one an interrupted run made (its tag names blue).
func (s *ScaleSet) CreateGreen(ctx context.Context, name, version string, sizes plan.Sizes) error {
	img, err := ParseImage(version)
	if err != nil {
		return err
	}
	blue, err := s.mustGet(ctx, s.name)
	if err != nil {
		return err
	}
	if err := greenCopyRefusal(blue); err != nil {
		return err
	}
	m, err := greenModel(blue, name, img, int64(sizes.Desired))
	if err != nil {
		return err
	}
	return s.retry(ctx, "create green scale set "+quote(name), func() (bool, error) {
		g, err := s.get(ctx, name)
		if err != nil {
			return false, err
		}
		if g != nil {
			return true, s.ownGreen(blue, g, version)
		}
		p, err := s.c.sets.BeginCreateOrUpdate(ctx, s.group, name, m, nil)
		if err != nil {
			return false, wrap(err, "create scale set %q", name)
		}
		if err := wait(ctx, s.c, p, "the creation of scale set "+quote(name)); err != nil {
			return false, err
		}
		return true, nil
	})
}

// ownGreen accepts a scale set of green's name that an earlier call made
// beside blue for version.
func (s *ScaleSet) ownGreen(blue, g *armcompute.VirtualMachineScaleSet, version string) error {
	if !strings.EqualFold(str(g.Tags[GreenTag]), str(blue.ID)) {
		return inputErrorf("scale set %q already exists and is not a green scale set of %q (no tag %s naming it); delete it or use another --strategy", str(g.Name), s.name, GreenTag)
	}
	if got := ImageString(g.Properties.VirtualMachineProfile.StorageProfile.ImageReference); got != version {
		return inputErrorf("green scale set %q, made earlier, launches image %q, not %q; delete it and run again", str(g.Name), got, version)
	}
	return nil
}

// UseGreen implements cloud.BlueGreen.
func (s *ScaleSet) UseGreen(name string) { s.greens = []string{name} }

// GroupSizes implements cloud.BlueGreen: the capacity.
func (s *ScaleSet) GroupSizes(ctx context.Context, group string) (plan.Sizes, error) {
	m, err := s.mustGet(ctx, group)
	if err != nil {
		return plan.Sizes{}, err
	}
	return capacitySizes(*m.SKU.Capacity), nil
}

// SetGroupSizes implements cloud.BlueGreen: the capacity (see resize).
func (s *ScaleSet) SetGroupSizes(ctx context.Context, group string, sz plan.Sizes) error {
	return s.resize(ctx, group, int64(sz.Desired))
}

// DeleteGroup implements cloud.BlueGreen: the scale set and its
// instances; a missing one is deleted.
func (s *ScaleSet) DeleteGroup(ctx context.Context, group string) error {
	return s.retry(ctx, "delete scale set "+quote(group), func() (bool, error) {
		m, err := s.get(ctx, group)
		if err != nil || m == nil {
			return err == nil, err
		}
		p, err := s.c.sets.BeginDelete(ctx, s.group, group, nil)
		if status(err) == http.StatusNotFound {
			return true, nil
		}
		if err != nil {
			return false, wrap(err, "delete scale set %q", group)
		}
		return false, wait(ctx, s.c, p, "the deletion of scale set "+quote(group))
	})
}
