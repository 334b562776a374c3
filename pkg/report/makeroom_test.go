package report

import (
	"strings"
	"testing"
	"time"
)

func TestWriteSurges(t *testing.T) {
	at := time.Date(2026, 11, 28, 7, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		surges []Surge
		want   []string
	}{
		{"none: no section", nil, nil},
		{"restored, with the fewest Ready seen", []Surge{{Workload: "Deployment shop/web", Batch: 1, Replicas: 1, Extra: 1, Ready: 1, MinReady: 1, State: "Restored", SurgedAt: &at, Took: Duration(42 * time.Second)}},
			[]string{"Made room (--make-room):", "Deployment shop/web", "1 -> 2", "42s", "Restored"}},
		{"up, none sampled yet", []Surge{{Workload: "Deployment shop/api", Batch: 2, Replicas: 3, Extra: 3, Ready: 3, MinReady: -1, State: "Surged", SurgedAt: &at}},
			[]string{"3 -> 6", "Surged", " - "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := writeSurges(&b, RunReport{Surges: tt.surges}); err != nil {
				t.Fatal(err)
			}
			if tt.want == nil && b.Len() > 0 {
				t.Errorf("want nothing, got:\n%s", b.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("missing %q in:\n%s", w, b.String())
				}
			}
		})
	}
}
