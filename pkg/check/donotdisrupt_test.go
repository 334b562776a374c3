package check

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDoNotDisruptOf holds the reading of a pod's annotation to Karpenter's
// (v1.15.0 pkg/utils/pod/scheduling.go IsDoNotDisruptActive and
// parseDoNotDisrupt): "true"; a positive Go duration from the pod's start,
// in force while the pod is younger; any other value ignored.
func TestDoNotDisruptOf(t *testing.T) {
	now := t0
	started := func(ago time.Duration) *metav1.Time { return &metav1.Time{Time: now.Add(-ago)} }
	for _, tc := range []struct {
		name, value string
		absent      bool
		start       *metav1.Time
		active      bool
		until       time.Time
	}{
		{name: "no annotation", absent: true, start: started(time.Minute)},
		{name: "true", value: "true", start: started(time.Hour), active: true},
		{name: "true, not started", value: "true", active: true},
		{name: "5m, started 4m ago", value: "5m", start: started(4 * time.Minute), active: true, until: now.Add(time.Minute)},
		{name: "5m, started 5m ago: lapsed", value: "5m", start: started(5 * time.Minute), until: now},
		{name: "5m, started 6m ago: lapsed", value: "5m", start: started(6 * time.Minute), until: now.Add(-time.Minute)},
		{name: "1h30m, started 1h ago", value: "1h30m", start: started(time.Hour), active: true, until: now.Add(30 * time.Minute)},
		{name: "5m, not started: held, as Karpenter fails safe", value: "5m", active: true},
		{name: "invalid: ignored", value: "5 minutes", start: started(time.Minute)},
		{name: "false: not a duration, ignored", value: "false", start: started(time.Minute)},
		{name: "True: only true is", value: "True", start: started(time.Minute)},
		{name: "empty: ignored", value: "", start: started(time.Minute)},
		{name: "0s: not positive, ignored", value: "0s", start: started(time.Minute)},
		{name: "-5m: not positive, ignored", value: "-5m", start: started(time.Minute)},
		{name: "a day in days: not a Go duration, ignored", value: "1d", start: started(time.Minute)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &corev1.Pod{Status: corev1.PodStatus{StartTime: tc.start}}
			if !tc.absent {
				p.Annotations = map[string]string{AnnDoNotDisrupt: tc.value}
			}
			got := DoNotDisruptOf(p, now)
			if got.Active != tc.active || !got.Until.Equal(tc.until) || got.Value != tc.value {
				t.Errorf("got %+v, want active %v until %v", got, tc.active, tc.until)
			}
		})
	}
}

// TestNodeDoNotDisrupt: on a Node or NodeClaim only "true" blocks
// (v1.15.0 pkg/controllers/state/statenode.go ValidateNodeDisruptable).
func TestNodeDoNotDisrupt(t *testing.T) {
	for _, tc := range []struct {
		annotations map[string]string
		want        bool
	}{
		{nil, false},
		{map[string]string{AnnDoNotDisrupt: "true"}, true},
		{map[string]string{AnnDoNotDisrupt: "5m"}, false},
		{map[string]string{AnnDoNotDisrupt: "false"}, false},
		{map[string]string{AnnDoNotDisrupt: "True"}, false},
		{map[string]string{"karpenter.sh/do-not-consolidate": "true"}, false},
	} {
		t.Run(tc.annotations[AnnDoNotDisrupt], func(t *testing.T) {
			if got := NodeDoNotDisrupt(tc.annotations); got != tc.want {
				t.Errorf("NodeDoNotDisrupt(%v) = %v, want %v", tc.annotations, got, tc.want)
			}
		})
	}
}
