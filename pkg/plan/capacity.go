package plan

// CapacityPlan is what the run needs of the cloud's shared limits (quotas,
// subnet and pod IP ranges, zonal offerings) for the nodes it adds, and what
// the cloud said was free when the plan was made. A fleet plan adds up the
// Quotas of the targets a stage runs at once by Scope: the limits are per
// account, project or subscription and region, not per cluster.
type CapacityPlan struct {
	// Quotas are the limits the surge counts against, one per quota the
	// provider could read.
	Quotas []QuotaUse `json:"quotas,omitempty"`
	// Unprovable says what the provider could not prove, and why (a
	// quota it may not read, prefix delegation, an unknown instance
	// family); each is also a capacity-unprovable warning.
	Unprovable []string `json:"unprovable,omitempty"`
}

// QuotaUse is one shared limit: how much of it the run needs on top of what
// is in use, and how much was free.
type QuotaUse struct {
	// Scope identifies the limit across clusters and runs, so that two
	// targets on the same account and region add up: the cloud, the
	// account, project or subscription, the region or subnet, and the
	// quota's code, joined with "/" (e.g.
	// "aws/123456789012/us-east-1/L-1216C47A",
	// "gcp/my-project/europe-west1/CPUS",
	// "aws/123456789012/subnet-0abc/ips").
	Scope string `json:"scope"`
	// Name is the limit as the cloud's console names it.
	Name string `json:"name"`
	// Unit is what Needed, Free and Limit count: "vCPU", "IP",
	// "instance", "GB".
	Unit string `json:"unit"`
	// Needed is what the run adds at its peak.
	Needed int64 `json:"needed"`
	// Free is Limit less what was in use when the plan was made.
	Free int64 `json:"free"`
	// Limit is the quota's value; 0 where only what is free is known
	// (a subnet's available addresses).
	Limit int64 `json:"limit,omitempty"`
}

// Fits reports whether the run's need fits what is free.
func (q QuotaUse) Fits() bool { return q.Needed <= q.Free }
