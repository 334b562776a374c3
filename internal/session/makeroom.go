package session

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/report"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/snapshot"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
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

// surgesReported are rec's --make-room surges as report shows them.
func surgesReported(rec *state.Record) []report.Surge {
	var out []report.Surge
	for _, s := range rec.MakeRoom {
		r := report.Surge{Workload: fmt.Sprintf("%s %s/%s", s.Kind, s.Namespace, s.Name), Batch: s.Batch, Replicas: s.Replicas, Extra: s.Extra,
			Ready: s.Ready, MinReady: s.MinReady, State: string(s.State), SurgedAt: s.SurgedAt, Note: s.Note}
		if s.SurgedAt != nil && s.RestoredAt != nil {
			r.Took = report.Duration(s.RestoredAt.Sub(*s.SurgedAt).Truncate(time.Second))
		}
		out = append(out, r)
	}
	return out
}
