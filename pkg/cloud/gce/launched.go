package gce

import (
	"context"
	"slices"
	"time"

	compute "google.golang.org/api/compute/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// withLaunched gives each machine the time Compute created its instance:
// instances.list's creationTimestamp, one list per zone (compute-api.json
// Instance.creationTimestamp, "[Output Only] Creation timestamp in RFC3339
// text format"). From there to its node's Ready is the whole of a join
// (plan.MachineJoinPace), boot included, which the Node's own creation
// leaves out. A timestamp Compute does not give leaves Launched zero.
func (p *Client) withLaunched(ctx context.Context, machines map[string]plan.Machine) error {
	var zones []string
	for _, m := range machines {
		if !slices.Contains(zones, m.Zone) {
			zones = append(zones, m.Zone)
		}
	}
	created := map[string]time.Time{}
	for _, zone := range zones {
		err := p.svc.Instances.List(p.project, zone).Fields("items(name,creationTimestamp)", "nextPageToken").Pages(ctx, func(l *compute.InstanceList) error {
			for _, in := range l.Items {
				if t, err := time.Parse(time.RFC3339, in.CreationTimestamp); err == nil {
					created[zone+"/"+in.Name] = t
				}
			}
			return nil
		})
		if err != nil {
			return wrap(err, "list instances in zone %q", zone)
		}
	}
	for node, m := range machines {
		m.Launched = created[m.Zone+"/"+m.ID]
		machines[node] = m
	}
	return nil
}
