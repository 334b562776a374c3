package state

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/report"
)

// TestAttempts: an attempt begins, is the current one, and ends once; a
// record without attempts has the zero one.
func TestAttempts(t *testing.T) {
	var r Record
	if got := r.CurrentAttempt(); got != (Attempt{}) {
		t.Errorf("no attempt: current %+v, want the zero one", got)
	}
	t0 := time.Date(2026, 11, 28, 3, 0, 0, 0, time.FixedZone("CET", 3600))
	r.BeginAttempt(AttemptRun, "", t0)
	r.EndAttempt(t0.Add(time.Minute), "paused")
	r.EndAttempt(t0.Add(time.Hour), "failed") // ended already: kept
	r.BeginAttempt(AttemptInCluster, "job-x7k2p", t0.Add(2*time.Minute))
	first, cur := r.Attempts[0], r.CurrentAttempt()
	if first.EndedAt == nil || !first.EndedAt.Equal(t0.Add(time.Minute)) || first.Outcome != "paused" || first.StartedAt.Location() != time.UTC {
		t.Errorf("first attempt %+v, want ended a minute in, paused, in UTC", first)
	}
	if cur.Kind != AttemptInCluster || cur.Pod != "job-x7k2p" || cur.EndedAt != nil {
		t.Errorf("current attempt %+v, want the in-cluster pod's, under way", cur)
	}
}

// TestStartGate: a soak before a wave is recorded once and gone on with
// while pending; an evaluated one starts anew; the record keeps the last
// maxGates.
func TestStartGate(t *testing.T) {
	var r Record
	if r.LastGate() != nil || (*Record)(nil).LastGate() != nil {
		t.Fatal("a record without gates has a last one")
	}
	t0 := time.Date(2026, 11, 28, 3, 0, 0, 500, time.UTC)
	g := r.StartGate(2, t0, time.Minute)
	if !g.Pending() || g.SoakFrom != t0.Truncate(time.Second) {
		t.Errorf("gate %+v, want pending from %s", g, t0.Truncate(time.Second))
	}
	if again := r.StartGate(2, t0.Add(time.Hour), time.Minute); again != r.LastGate() || len(r.Gates) != 1 || !again.SoakFrom.Equal(g.SoakFrom) {
		t.Errorf("a pending gate of the same wave started anew: %+v", r.Gates)
	}
	now := t0.Add(time.Minute)
	r.LastGate().Evaluated = &now
	for wave := 3; wave < 3+maxGates+5; wave++ {
		r.StartGate(wave, t0, 0)
	}
	if len(r.Gates) != maxGates || r.LastGate().Wave != 2+maxGates+5 {
		t.Errorf("%d gates, the last of wave %d; want %d, the newest", len(r.Gates), r.LastGate().Wave, maxGates)
	}
}

// TestRecordParts: the small readings status, the lifecycle and the
// engine make of a record's parts.
func TestRecordParts(t *testing.T) {
	orig := &plan.Sizes{Min: 1, Desired: 3, Max: 4}
	for _, tc := range []struct {
		name string
		got  bool
		want bool
	}{
		{"finished is over", StateFinished.Over(), true},
		{"rolled back is over", StateRolledBack.Over(), true},
		{"aborted is over", StateAborted.Over(), true},
		{"paused is not over", StatePaused.Over(), false},
		{"a service offers resume always", (&ManagedRecord{Controls: []string{}}).Offers("resume"), true},
		{"a service offers what it lists", (&ManagedRecord{Controls: []string{"cancel"}}).Offers("cancel"), true},
		{"a service offers nothing it does not list", (&ManagedRecord{Controls: []string{"cancel"}}).Offers("rollback"), false},
		{"a record of before Controls offers all", (&ManagedRecord{}).Offers("complete"), true},
		{"a scale-up for the version rolled back from", (&CloudRecord{GroupRecord: GroupRecord{FromVersion: "1", Original: orig}, ScaleRecord: ScaleRecord{ScaledFor: "2"}}).ScaledForRolledBack("1"), true},
		{"a scale-up for the target itself", (&CloudRecord{GroupRecord: GroupRecord{FromVersion: "1", Original: orig}, ScaleRecord: ScaleRecord{ScaledFor: "2"}}).ScaledForRolledBack("2"), false},
		{"no scale-up recorded", (&CloudRecord{GroupRecord: GroupRecord{FromVersion: "1", Original: orig}}).ScaledForRolledBack("1"), false},
		{"surges not restored", len((&Record{MakeRoom: []Surge{{State: SurgeIntended}, {State: SurgeRestored}, {State: SurgeUp}}}).Surged()) == 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
}

// TestReportsAndDelete: the report history round-trips through its own
// ConfigMap, apart from the record; an unreadable one is an error naming
// it; Delete removes the record and is quiet when there is none.
func TestReportsAndDelete(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	s := &Store{Client: client, Namespace: DefaultNamespace}
	if h, err := s.LoadReports(ctx, "g"); err != nil || len(h.Runs) != 0 {
		t.Fatalf("no reports: %+v, %v; want an empty history", h, err)
	}
	t0 := time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC)
	h := report.History{}.With(report.Run{StartedAt: t0, Strategy: "eks"}, report.Attempt{Kind: "run", StartedAt: t0})
	for range 2 { // created, then updated
		if err := s.SaveReports(ctx, "g", h); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.LoadReports(ctx, "g")
	if err != nil || len(got.Runs) != 1 || got.Runs[0].Strategy != "eks" {
		t.Errorf("reports %+v, %v; want the run saved", got, err)
	}
	bad := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ReportName("b"), Namespace: DefaultNamespace}, Data: map[string]string{reportKey: "{"}}
	if _, err := client.CoreV1().ConfigMaps(DefaultNamespace).Create(ctx, bad, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LoadReports(ctx, "b"); err == nil || !strings.Contains(err.Error(), ReportName("b")) {
		t.Errorf("unreadable reports: %v, want an error naming the ConfigMap", err)
	}
	if err := s.Save(ctx, &Record{NodeGroup: "g"}); err != nil {
		t.Fatal(err)
	}
	for range 2 { // there, then gone
		if err := s.Delete(ctx, "g"); err != nil {
			t.Fatal(err)
		}
	}
	if rec, err := s.Load(ctx, "g"); err != nil || rec != nil {
		t.Errorf("after Delete: %+v, %v; want no record", rec, err)
	}
}
