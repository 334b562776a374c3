package gcefake

import (
	"fmt"
	"time"

	compute "google.golang.org/api/compute/v1"
)

// Codes of a creation that Compute cannot carry out, as a managed
// instance's lastAttempt.errors reports them (compute-api.json,
// ManagedInstance.lastAttempt: "Encountered errors during the last
// attempt to create or delete the instance"; the codes are those of
// https://cloud.google.com/compute/docs/troubleshooting/troubleshooting-vm-creation).
// ResourceNotFound is a resource the template names that is not there
// (its image deleted, say), PermissionDenied a permission the creation
// needs that the group's service agent lacks: neither passes on a retry.
// RateExceeded is Compute's own rate limit, which a retry gets past.
const (
	QuotaExceeded             = "QUOTA_EXCEEDED"
	ZoneResourcePoolExhausted = "ZONE_RESOURCE_POOL_EXHAUSTED"
	ResourceNotFound          = "RESOURCE_NOT_FOUND"
	PermissionDenied          = "PERMISSIONS_ERROR"
	RateExceeded              = "RESOURCE_OPERATION_RATE_EXCEEDED"
)

// FailCreations makes every creation of a VM in zone ("" for every zone)
// fail with code, as a project out of quota, a zone out of capacity, a
// template whose image is gone or a permission the creation lacks do: the managed instance stays CREATING (or RECREATING), its
// lastAttempt names the error, and the group tries again. An empty code
// lets creations succeed again.
func (s *Server) FailCreations(zone, code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if code == "" {
		delete(s.failCreate, zone)
	} else {
		s.failCreate[zone] = code
	}
	s.notifyLocked()
}

// creationErrorLocked is the error a creation of in fails with now; nil
// when it succeeds.
func (s *Server) creationErrorLocked(in *instance) *compute.ManagedInstanceLastAttemptErrorsErrors {
	code := s.failCreate[in.Zone]
	if code == "" {
		code = s.failCreate[""]
	}
	msg := map[string]string{
		QuotaExceeded:             fmt.Sprintf("Quota 'CPUS' exceeded.  Limit: 24.0 in region %s.", RegionOf(in.Zone)),
		ResourceNotFound:          fmt.Sprintf("The resource '%s' was not found", in.Image),
		PermissionDenied:          fmt.Sprintf("Required 'compute.instances.create' permission for 'projects/%s/zones/%s/instances/%s'", in.Project, in.Zone, in.Name),
		RateExceeded:              "Operation rate exceeded for resource. Too frequent operations from the source resource.",
		ZoneResourcePoolExhausted: fmt.Sprintf("The zone 'projects/%s/zones/%s' does not have enough resources available to fulfill the request.  Try a different zone, or try again later.", in.Project, in.Zone),
	}
	if code == "" {
		return s.quotaErrorLocked(in)
	}
	if m, ok := msg[code]; ok {
		return &compute.ManagedInstanceLastAttemptErrorsErrors{Code: code, Message: m}
	}
	return &compute.ManagedInstanceLastAttemptErrorsErrors{Code: code, Message: "creation failed: " + code}
}

// failCreationLocked records a failed attempt and schedules the next.
func (s *Server) failCreationLocked(in *instance, e *compute.ManagedInstanceLastAttemptErrorsErrors) {
	in.lastErr = e
	in.due = time.Now().Add(max(s.opts.LaunchDelay, 0))
	s.logf("gcefake: creating %s failed: %s; trying again", in.Name, e.Code)
}

// lastAttempt is an instance's lastAttempt as listManagedInstances
// reports it; nil after a success.
func lastAttempt(in *instance) *compute.ManagedInstanceLastAttempt {
	if in.lastErr == nil {
		return nil
	}
	return &compute.ManagedInstanceLastAttempt{Errors: &compute.ManagedInstanceLastAttemptErrors{
		Errors: []*compute.ManagedInstanceLastAttemptErrorsErrors{in.lastErr},
	}}
}

// FailTemplateInserts makes every instanceTemplates.insert from now on
// end in a failed operation with code and message, the template not made
// ("" lets them succeed again): the operation is DONE with its error
// field set (compute-api.json, Operation.error: "If errors are generated
// during processing of the operation, this field will be populated"), as
// a quota reached while the insert runs leaves it.
func (s *Server) FailTemplateInserts(code, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failTemplate = nil
	if code != "" {
		s.failTemplate = &compute.OperationError{Errors: []*compute.OperationErrorErrors{{Code: code, Message: message}}}
	}
}
