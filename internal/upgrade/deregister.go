package upgrade

import (
	"context"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// deregister has the cloud's load balancers let go of drained nodes before
// their machines are removed (cloud.Deregisterer): the exclusion label and
// --post-drain-wait do not take a node out of a load balancer the cloud
// attached it to, and terminating it there cuts its connections. It comes
// after the post-drain wait, which stays the minimum, and before every
// removal; a provider without load balancers passes. A timeout stops the
// run with the nodes drained and cordoned and nothing removed: a re-run
// asks again.
func (b *batchRun) deregister(ctx context.Context, what string, names []string) error {
	d, ok := b.cfg.Provider.(cloud.Deregisterer)
	if !ok || len(names) == 0 {
		return nil
	}
	timeout := b.cfg.DeregistrationTimeout
	if timeout <= 0 {
		timeout = plan.DefaultDeregistrationTimeout
	}
	return d.Deregister(ctx, names, timeout, func(waitingFor string) {
		b.logf("%s: waiting for %s", what, waitingFor)
		b.progress.waitingFor(waitingFor)
	})
}
