package plan

import (
	"strings"
	"testing"
)

// A group with a target size alone (a managed instance group) is never
// said to have a max (issue 42: "back to desired 9, max 9").
func TestSizeLinesOfATargetSize(t *testing.T) {
	for _, tc := range []struct {
		name       string
		targetOnly bool
		before     Sizes
		want       []string
		notWant    string
	}{
		{"auto scaling group", false, Sizes{Min: 1, Desired: 9, Max: 10},
			[]string{"+6 nodes: desired 9 -> 15, max 10 -> 16", "back to desired 9, max 10"}, ""},
		{"managed instance group", true, Sizes{Desired: 9, Max: 9},
			[]string{"+6 nodes: target size 9 -> 15", "back to target size 9"}, "max"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &CloudPlan{Launches: Launches{TargetVersion: "2"}, Before: tc.before, During: tc.before.less(-6), ScaleUp: 6, TargetSizeOnly: tc.targetOnly}
			var lines []string
			for _, s := range (eks{}).Steps(&Plan{Cloud: c}) {
				lines = append(lines, s.Phase+": "+s.Detail)
			}
			lines = append(lines, scaleUpLine(c))
			c.Resumed = true
			lines = append(lines, scaleUpLine(c))
			text := strings.Join(lines, "\n")
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("lines lack %q:\n%s", w, text)
				}
			}
			if tc.notWant != "" && strings.Contains(text, tc.notWant) {
				t.Errorf("lines say %q:\n%s", tc.notWant, text)
			}
		})
	}
}
