package gce

import (
	"fmt"
	"slices"

	compute "google.golang.org/api/compute/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
)

// retried are the lastAttempt error codes of a managed instance that a
// later attempt of the group's may get past: Compute's own rate limits
// and transient failures (https://cloud.google.com/compute/docs/api/errors,
// "Retry the request"); the run waits them out. Any other code no wait
// outlasts: the project's quota, a zone without the capacity
// (https://cloud.google.com/compute/docs/troubleshooting/troubleshooting-vm-creation),
// and a template Compute cannot launch (its image, template or service
// account not found, a permission denied). The group goes on trying; the
// run stops and names the instance and the error, as EKS's
// NodeCreationFailure does, rather than wait out --node-ready-timeout.
var retried = []string{"RESOURCE_OPERATION_RATE_EXCEEDED", "RATE_LIMIT_EXCEEDED", "INTERNAL_ERROR", "SERVICE_UNAVAILABLE", "BACKEND_ERROR", "RESOURCE_NOT_READY"}

// creating are the actions of a managed instance being created.
var creating = []string{"CREATING", "CREATING_WITHOUT_RETRIES", "RECREATING"}

// creationFailure is the error of the first managed instance being
// created whose last attempt failed with a code no wait outlasts; nil
// when none did.
func creationFailure(byName map[string]*compute.ManagedInstance, of map[string]MIG) error {
	names := slices.Sorted(mapsKeys(byName))
	for _, name := range names {
		mi := byName[name]
		if !slices.Contains(creating, mi.CurrentAction) || mi.LastAttempt == nil || mi.LastAttempt.Errors == nil {
			continue
		}
		for _, e := range mi.LastAttempt.Errors.Errors {
			if slices.Contains(retried, e.Code) {
				continue
			}
			fix := "fix the group's instance template (its image, its service account, the permissions it needs) and run again"
			if f, ok := capacityFixes[e.Code]; ok {
				fix = f + " and run again"
			}
			msg := fmt.Sprintf("instance %q of managed instance group %q cannot be created in zone %q: %s: %s; the group keeps trying, the run stops: %s, or put the group back with \"kubectl nodeupgrade abort\"",
				name, of[name].String(), zoneOf(mi), e.Code, oneLine(e.Message), fix)
			return &Error{Msg: cloud.CodeNodeCreation + ": " + msg, Err: cloud.UpdateError{Code: cloud.CodeNodeCreation, Message: msg, Nodes: []string{name}}}
		}
	}
	return nil
}
