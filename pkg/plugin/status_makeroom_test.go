package plugin

import (
	"strings"
	"testing"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/makeroom"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// TestStatusNamesTheSurgesAKilledRunLeft: a run killed with --make-room
// surges up leaves them in its record; status's table (one group and -A)
// and status -w's line name each (what, by how much, for which batch,
// since when), not the ones put back, and the table says who puts them
// back.
func TestStatusNamesTheSurgesAKilledRunLeft(t *testing.T) {
	surgedAt := testNow.Add(-7 * time.Minute)
	rec := recordFor("ng")
	rec.State = state.StateInterrupted
	rec.MakeRoom = []state.Surge{
		{Surge: makeroom.Surge{Kind: "Deployment", Namespace: "shop", Name: "web", Replicas: 1, Extra: 1}, Batch: 2, State: state.SurgeUp, SurgedAt: &surgedAt},
		{Surge: makeroom.Surge{Kind: "Deployment", Namespace: "shop", Name: "api", Replicas: 3, Extra: 2,
			HPA: &makeroom.HPA{Name: "api", MinReplicas: 3, MaxReplicas: 6}}, Batch: 2, State: state.SurgeIntended},
		{Surge: makeroom.Surge{Kind: "Deployment", Namespace: "shop", Name: "db", Replicas: 1, Extra: 1}, Batch: 1, State: state.SurgeRestored, SurgedAt: &surgedAt},
	}
	client := statusFixture(t, []*state.Record{rec})
	want := []string{
		`Deployment "shop/web" surged by 1 (1 to 2 replicas) for batch 2 since ` + surgedAt.Format(time.RFC3339),
		`Deployment "shop/api" surged by 2 (3 to 5 replicas, through HorizontalPodAutoscaler "api") for batch 2, recorded before it was made`,
	}
	for _, args := range [][]string{{"ng"}, {"-A"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			out, _, code := runStatus(t, client, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, out)
			}
			for _, w := range append(want, `"kubectl nodeupgrade abort ng" or the run again puts it back`) {
				if !strings.Contains(out, w) {
					t.Errorf("status %v lacks %q:\n%s", args, w, out)
				}
			}
			if strings.Contains(out, "shop/db") {
				t.Errorf("status names a surge put back:\n%s", out)
			}
		})
	}
	t.Run("-w", func(t *testing.T) {
		line := (&StatusOptions{}).watchLine(describeRun(rec, false, "", testNow))
		for _, w := range want {
			if !strings.Contains(line, w) {
				t.Errorf("-w line lacks %q: %s", w, line)
			}
		}
	})
}
