package pods

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestFinished(t *testing.T) {
	for _, tc := range []struct {
		phase corev1.PodPhase
		want  bool
	}{
		{corev1.PodPending, false},
		{corev1.PodRunning, false},
		{corev1.PodUnknown, false},
		{"", false}, // not reported yet
		{corev1.PodSucceeded, true},
		{corev1.PodFailed, true},
	} {
		t.Run(string(tc.phase), func(t *testing.T) {
			p := &corev1.Pod{Status: corev1.PodStatus{Phase: tc.phase}}
			if got := Finished(p); got != tc.want {
				t.Errorf("Finished(phase %q) = %v, want %v", tc.phase, got, tc.want)
			}
		})
	}
}
