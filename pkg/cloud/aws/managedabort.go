package aws

import (
	"context"
	"fmt"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
)

var _ cloud.UpdateAborter = (*ManagedNodeGroup)(nil)

// AbortAdvice implements cloud.UpdateAborter: EKS offers no way to stop an
// in-place update of a managed node group (API Reference, CancelUpdate:
// Auto Mode rollbacks only), so while it runs abort can only say how to
// follow it and undo it after.
func (m *ManagedNodeGroup) AbortAdvice(ctx context.Context, id, group string) (string, error) {
	p, err := m.Progress(ctx, id)
	if err != nil || p.Finished() {
		return "", err
	}
	return fmt.Sprintf("EKS is updating managed node group %q (update %s) and cannot stop an in-place update; follow it with \"kubectl nodeupgrade status -w %s\", and once it has ended abort puts the update settings back; EKS cannot roll a node group back to an earlier version, so a newer release or --strategy blue-green mends what the update broke", m.group.Name, id, group), nil
}
