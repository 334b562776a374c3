package gce

import (
	"fmt"
	"slices"

	compute "google.golang.org/api/compute/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
)

// stopCodes are the lastAttempt error codes of a managed instance that no
// wait outlasts: the project's quota, or a zone without the capacity
// (https://cloud.google.com/compute/docs/troubleshooting/troubleshooting-vm-creation).
// A group goes on trying; the run stops and says why, as EKS's
// NodeCreationFailure does, rather than wait out --node-ready-timeout.
var stopCodes = []string{"QUOTA_EXCEEDED", "ZONE_RESOURCE_POOL_EXHAUSTED", "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS"}

// creating are the actions of a managed instance being created.
var creating = []string{"CREATING", "CREATING_WITHOUT_RETRIES", "RECREATING"}

// creationFailure is the error of the first managed instance being
// created whose last attempt failed for quota or capacity; nil when
// none did.
func creationFailure(byName map[string]*compute.ManagedInstance, of map[string]MIG) error {
	names := slices.Sorted(mapsKeys(byName))
	for _, name := range names {
		mi := byName[name]
		if !slices.Contains(creating, mi.CurrentAction) || mi.LastAttempt == nil || mi.LastAttempt.Errors == nil {
			continue
		}
		for _, e := range mi.LastAttempt.Errors.Errors {
			if slices.Contains(stopCodes, e.Code) {
				msg := fmt.Sprintf("instance %q of managed instance group %q cannot be created in zone %q: %s: %s; the group keeps trying, the run stops: raise the quota or free the capacity and run again, or put the group back with \"kubectl nodeupgrade abort\"",
					name, of[name].String(), zoneOf(mi), e.Code, oneLine(e.Message))
				return &Error{Msg: "NodeCreationFailure: " + msg, Err: cloud.UpdateError{Code: "NodeCreationFailure", Message: msg, Nodes: []string{name}}}
			}
		}
	}
	return nil
}
