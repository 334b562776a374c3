package cloud

import (
	"errors"
	"slices"
	"strings"
)

// groupClouds are well-known clouds, by the scheme of a node's
// spec.providerID, whose machines usually belong to a group that keeps
// them (EC2 Auto Scaling groups, Compute Engine managed instance groups,
// Azure virtual machine scale sets), whether or not a provider here serves
// them: deleting such a node's Node object leaves its machine running,
// un-upgraded, and still counted by its group.
var groupClouds = []string{"aws", "azure", "gce"}

// GroupCloud returns the cloud a node's provider ID names when that
// cloud's machines may belong to a group, or "": a well-known one by its
// scheme, else the registered cloud that owns the machine (every cloud
// here owns the machines behind node groups).
func GroupCloud(providerID string) string {
	scheme, _, ok := strings.Cut(providerID, "://")
	if ok && slices.Contains(groupClouds, scheme) {
		return scheme
	}
	for _, name := range Names() {
		if c, ok := clouds[name]; ok && providerID != "" && c.Owns(providerID) {
			return name
		}
	}
	return ""
}

// ErrManaged is behind Open's error when the machines belong to a group
// that a managed service upgrades itself (an EKS managed node group): they
// do belong to a group, which the plugin must not change behind the
// service's back.
var ErrManaged = errors.New("the machines belong to a managed node group")
