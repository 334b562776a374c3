package azurefake

import (
	"net/http"
	"strings"
)

// The refusals of new machines for want of capacity a test may set
// (RefuseLaunches), each with the words Azure answers it with:
//   - SkuNotAvailable: "The requested size for resource '<resource>' is
//     currently not available in location '<location>' zones '<zone>' for
//     subscription '<subscriptionID>'. Please try another size or deploy to
//     a different location or zones. See https://aka.ms/azureskunotavailable
//     for details."
//     (https://learn.microsoft.com/en-us/azure/azure-resource-manager/troubleshooting/error-sku-not-available);
//   - AllocationFailed, ZonalAllocationFailed: "Allocation failed. We do not
//     have sufficient capacity for the requested VM size in this region."
//     (https://learn.microsoft.com/en-us/troubleshoot/azure/virtual-machines/windows/allocation-failure).
//
// Compute answers a scale set's SkuNotAvailable at once (409) and an
// allocation failure on the operation; the fake answers both at once.
const (
	LaunchSkuNotAvailable       = "SkuNotAvailable"
	LaunchAllocationFailed      = "AllocationFailed"
	LaunchZonalAllocationFailed = "ZonalAllocationFailed"
)

// RefuseLaunches makes every new machine of agent pool or scale set name
// refused with code (one of the Launch constants): a pool's upgrade
// fails adding its surge, a scale set's scale-up is refused; "" launches
// again. Other pools and scale sets launch, as tests share the server.
func (s *Server) RefuseLaunches(name, code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refuseLaunches == nil {
		s.refuseLaunches = map[string]string{}
	}
	s.refuseLaunches[strings.ToLower(name)] = code
}

// launchRefusalLocked is Azure's refusal of add new machines of vmSize
// for pool or scale set name (resource names it in the words), nil when
// its launches are not refused.
func (s *Server) launchRefusalLocked(name, resource, vmSize string, add int) *armError {
	code := s.refuseLaunches[strings.ToLower(name)]
	if code == "" || add <= 0 {
		return nil
	}
	if code == LaunchSkuNotAvailable {
		return errorf(http.StatusConflict, LaunchSkuNotAvailable, "The requested size for resource '%s' is currently not available in location '%s' zones '1' for subscription '%s'. Please try another size or deploy to a different location or zones. See https://aka.ms/azureskunotavailable for details.",
			resource, s.opts.Location, s.opts.Subscription)
	}
	where := map[bool]string{true: "zone", false: "region"}[code == LaunchZonalAllocationFailed]
	return errorf(http.StatusConflict, code, "Allocation failed. We do not have sufficient capacity for the requested VM size %s in this %s. Read more about improving likelihood of allocation success at http://aka.ms/allocation-guidance", vmSize, where)
}

// str is *p, "" for nil.
func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
