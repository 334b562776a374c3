package gcefake

import (
	"fmt"
	"slices"
	"strings"

	compute "google.golang.org/api/compute/v1"
)

// machineTypes are the predefined machine types the fake knows, by name:
// their vCPUs (compute-api.json MachineType.guestCpus, "The number of
// virtual CPUs that are available to the instance") and memory
// (MachineType.memoryMb), from the machine families' tables
// (https://cloud.google.com/compute/docs/general-purpose-machines,
// https://cloud.google.com/compute/docs/compute-optimized-machines).
var machineTypes = map[string]struct{ cpus, memoryMb int64 }{
	"e2-small": {2, 2048}, "e2-medium": {2, 4096},
	"e2-standard-2": {2, 8192}, "e2-standard-4": {4, 16384}, "e2-standard-8": {8, 32768}, "e2-standard-16": {16, 65536},
	"n1-standard-1": {1, 3840}, "n1-standard-2": {2, 7680}, "n1-standard-4": {4, 15360}, "n1-standard-8": {8, 30720},
	"n2-standard-2": {2, 8192}, "n2-standard-4": {4, 16384}, "n2-standard-8": {8, 32768},
	"n2d-standard-2": {2, 8192}, "n2d-standard-4": {4, 16384},
	"c2-standard-4": {4, 16384}, "c2-standard-8": {8, 32768},
	"c3-standard-4": {4, 16384}, "c3-standard-8": {8, 32768},
}

// seriesQuota is the regional vCPU quota (compute-api.json Quota.metric)
// each machine series counts against: N1 and E2 against CPUS, the others
// their own (https://cloud.google.com/compute/resource-usage#cpu_quota).
var seriesQuota = map[string]string{
	"n1": "CPUS", "e2": "CPUS", "n2": "N2_CPUS", "n2d": "N2D_CPUS", "c2": "C2_CPUS", "c3": "C3_CPUS",
}

// countedQuotas are the regional quotas the fake reports and holds
// creations to: those whose usage it counts from its instances.
var countedQuotas = []string{"C2_CPUS", "C3_CPUS", "CPUS", "INSTANCES", "IN_USE_ADDRESSES", "N2D_CPUS", "N2_CPUS"}

// defaultQuota is the limit of a quota no test set: roomy, so that only a
// test that means to run short does.
const defaultQuota = 1000

// SetQuota sets the limit of a regional quota regions.get reports (its
// Quota.metric, limit and usage) and instance creations are held to:
// CPUS and the series' vCPU quotas, INSTANCES and IN_USE_ADDRESSES, the
// usage counted from the region's instances.
func (s *Server) SetQuota(project, region, metric string, limit float64) error {
	if !slices.Contains(countedQuotas, metric) {
		return fmt.Errorf("gcefake counts no usage of quota %s; it counts %v", metric, countedQuotas)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.quotas[project+"/"+region+"/"+metric] = limit
	s.notifyLocked()
	return nil
}

// regionQuotasLocked are the region's counted quotas, with their usage.
func (s *Server) regionQuotasLocked(project, region string) []*compute.Quota {
	out := make([]*compute.Quota, 0, len(countedQuotas))
	for _, metric := range countedQuotas {
		limit, ok := s.quotas[project+"/"+region+"/"+metric]
		if !ok {
			limit = defaultQuota
		}
		out = append(out, &compute.Quota{Metric: metric, Limit: limit, Usage: float64(s.usageLocked(project, region, metric, nil))})
	}
	return out
}

// usageLocked is what the region's instances use of a quota: each VM that
// exists (Compute counts an instance from its creation until it is
// deleted), less those still CREATING that were not admitted yet, with
// extra counted as if it existed.
func (s *Server) usageLocked(project, region, metric string, extra *instance) int64 {
	var n int64
	for _, in := range s.instances {
		if in.Project != project || RegionOf(in.Zone) != region || in.Action == ActionCreating && !in.admitted && in != extra {
			continue
		}
		n += s.takesLocked(in, metric)
	}
	return n
}

// takesLocked is how much of a quota one instance takes: its machine
// type's vCPUs of its series' quota, one of INSTANCES, and one of
// IN_USE_ADDRESSES per network interface with an access config (an
// external address;
// https://cloud.google.com/compute/resource-usage#regional_quotas).
func (s *Server) takesLocked(in *instance, metric string) int64 {
	if metric == "INSTANCES" {
		return 1
	}
	it := s.templates[in.Project+"/"+in.Template]
	if it == nil || it.Properties == nil {
		return 0
	}
	if metric == "IN_USE_ADDRESSES" {
		var n int64
		for _, ni := range it.Properties.NetworkInterfaces {
			if len(ni.AccessConfigs) > 0 {
				n++
			}
		}
		return n
	}
	typ := s.machineTypeLocked(in)
	series, _, _ := strings.Cut(typ, "-")
	if seriesQuota[series] != metric {
		return 0
	}
	return machineTypes[typ].cpus
}

// quotaErrorLocked is the QUOTA_EXCEEDED a creation of in fails with when
// it would take a quota SetQuota set past its limit, in Compute's words
// ("Quota 'CPUS' exceeded.  Limit: 24.0 in region us-central1."); nil when
// it fits, and then the instance counts from now on.
func (s *Server) quotaErrorLocked(in *instance) *compute.ManagedInstanceLastAttemptErrorsErrors {
	if in.Action != ActionCreating || in.admitted {
		return nil
	}
	region := RegionOf(in.Zone)
	for _, q := range s.regionQuotasLocked(in.Project, region) {
		if s.takesLocked(in, q.Metric) > 0 && float64(s.usageLocked(in.Project, region, q.Metric, in)) > q.Limit {
			return &compute.ManagedInstanceLastAttemptErrorsErrors{Code: QuotaExceeded,
				Message: fmt.Sprintf("Quota '%s' exceeded.  Limit: %.1f in region %s.", q.Metric, q.Limit, region)}
		}
	}
	in.admitted = true
	return nil
}

// SetOffered takes machine type typ out of zone (offered false) or puts
// it back: machineTypes.get in that zone answers 404, as Compute does for
// a type the zone does not offer ("not all machine types are available in
// all zones", https://cloud.google.com/compute/docs/regions-zones#available).
func (s *Server) SetOffered(zone, typ string, offered bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if offered {
		delete(s.notOffered, zone+"/"+typ)
	} else {
		s.notOffered[zone+"/"+typ] = true
	}
}

// getMachineType answers machineTypes.get from the fake's machine types,
// 404 for another or one SetOffered took out of the zone
// (https://cloud.google.com/compute/docs/reference/rest/v1/machineTypes/get).
func (s *Server) getMachineType(req *request) (any, error) {
	zone, name := req.parts[1], req.parts[3]
	mt, ok := machineTypes[name]
	s.mu.Lock()
	ok = ok && !s.notOffered[zone+"/"+name]
	s.mu.Unlock()
	if !ok {
		return nil, notFound("The resource 'projects/%s/zones/%s/machineTypes/%s' was not found", req.project, zone, name)
	}
	return &compute.MachineType{
		Kind: "compute#machineType", Name: name, GuestCpus: mt.cpus, MemoryMb: mt.memoryMb, Zone: zone,
		SelfLink: s.link(fmt.Sprintf("projects/%s/zones/%s/machineTypes/%s", req.project, zone, name)),
	}, nil
}

// machineTypeLocked is the machine type of the template an instance was
// created from, by name.
func (s *Server) machineTypeLocked(in *instance) string {
	it := s.templates[in.Project+"/"+in.Template]
	if it == nil || it.Properties == nil {
		return ""
	}
	_, typ, _ := resourceName(it.Properties.MachineType, "machineTypes")
	return typ
}
