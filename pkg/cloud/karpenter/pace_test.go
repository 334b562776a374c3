package karpenter

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestLaunchPace: the pool's NodeClaims' creation to Initialized, the
// median rounded up a second; claims not Initialized, or without the
// times, measure nothing.
func TestLaunchPace(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	timed := func(name string, took time.Duration, status string) nodeClaim {
		u := claim(name, "n-"+name, "h", "Initialized="+status)
		u.SetCreationTimestamp(metav1.NewTime(t0))
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		conds[0].(map[string]any)["lastTransitionTime"] = t0.Add(took).Format(time.RFC3339)
		if err := unstructured.SetNestedSlice(u.Object, conds, "status", "conditions"); err != nil {
			t.Fatal(err)
		}
		return toClaim(u)
	}
	tests := []struct {
		name   string
		claims []nodeClaim
		join   time.Duration
	}{
		{"none", nil, 0},
		{"not initialized", []nodeClaim{timed("a", 4*time.Second, "False")}, 0},
		{"no times", []nodeClaim{toClaim(claim("a", "n-a", "h", "Initialized=True"))}, 0},
		{"the median, a second more", []nodeClaim{timed("a", 4*time.Second, "True"), timed("b", 9*time.Second, "True"), timed("c", 5*time.Second, "True")}, 6 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := launchPace(tc.claims)
			if time.Duration(got.Join) != tc.join || (tc.join > 0) != (got.JoinFrom != "") {
				t.Errorf("launchPace: %+v, want join %s", got, tc.join)
			}
		})
	}
}
