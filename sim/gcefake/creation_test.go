package gcefake

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// TestProviderStopsAtACreationFailure: a creation Compute cannot carry
// out on a retry (a resource not found, a permission) ends the
// provider's wait at once, a NodeCreationFailure naming the instance and
// the error; a rate limit does not.
func TestProviderStopsAtACreationFailure(t *testing.T) {
	for _, tc := range []struct {
		code string
		stop bool
	}{
		{ResourceNotFound, true},
		{PermissionDenied, true},
		{RateExceeded, false},
	} {
		t.Run(tc.code, func(t *testing.T) {
			srv, _, key := newScene(t, 1, Opportunistic)
			p := openGCE(t, srv, key, plan.CloudTarget{})
			g := p.(cloud.Scaler)
			srv.FailCreations("", tc.code)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			must(t, g.SetDesiredAndMax(ctx, 2, 2))
			var err error
			for ctx.Err() == nil {
				if _, _, err = g.Machines(context.Background(), nil); err != nil {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			var ue cloud.UpdateError
			switch {
			case !tc.stop && err != nil:
				t.Fatalf("a rate limit stopped the wait: %v", err)
			case tc.stop && (!errors.As(err, &ue) || ue.Code != "NodeCreationFailure" || len(ue.Nodes) != 1 || !strings.Contains(err.Error(), tc.code) || !strings.Contains(err.Error(), ue.Nodes[0])):
				t.Fatalf("got %v, want a NodeCreationFailure naming the instance and %s", err, tc.code)
			}
		})
	}
}
