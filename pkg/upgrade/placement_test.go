package upgrade

import (
	"slices"
	"testing"
)

func TestSurelyPlaced(t *testing.T) {
	t.Parallel()
	zones := []string{"a", "b", "c"}
	for _, tc := range []struct {
		name    string
		perZone map[string]int
		n       int
		want    []string
	}{
		{name: "balanced, one per zone", perZone: map[string]int{"a": 2, "b": 2, "c": 2}, n: 3, want: zones},
		{name: "balanced, fewer than zones: AWS picks among the tied", perZone: map[string]int{"a": 2, "b": 2, "c": 2}, n: 2, want: nil},
		{name: "unbalanced: the emptiest zones first, the fullest gets none", perZone: map[string]int{"a": 3, "b": 1, "c": 1}, n: 2, want: []string{"b", "c"}},
		{name: "unbalanced, enough to reach the fullest", perZone: map[string]int{"a": 3, "b": 1, "c": 1}, n: 7, want: zones},
		{name: "an empty zone is filled first", perZone: map[string]int{"a": 2, "b": 2}, n: 1, want: []string{"c"}},
		{name: "nothing added", perZone: map[string]int{"a": 1}, n: 0, want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := surelyPlaced(tc.perZone, zones, tc.n); !slices.Equal(got, tc.want) {
				t.Errorf("surelyPlaced(%v, %d) = %v, want %v", tc.perZone, tc.n, got, tc.want)
			}
		})
	}
}
