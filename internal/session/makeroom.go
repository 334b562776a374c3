package session

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/snapshot"
)

// makeRoom adds to p what --make-room surges around each batch, with the
// HorizontalPodAutoscalers that scale the Deployments (the snapshot lists
// none).
func (s *Session) makeRoom(ctx context.Context, r *Request, p *plan.Plan, snap *snapshot.Cluster) error {
	if !r.MakeRoom || p == nil {
		return nil
	}
	hpas, err := s.Client.AutoscalingV2().HorizontalPodAutoscalers("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("--make-room: error when listing HorizontalPodAutoscalers: %w", err)
	}
	p.PlanMakeRoom(snap, hpas.Items)
	return nil
}
