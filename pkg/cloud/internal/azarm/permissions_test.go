package azarm

import (
	"strings"
	"testing"
)

// TestGrants holds the evaluation to Azure RBAC's rules
// (https://learn.microsoft.com/en-us/azure/role-based-access-control/role-definitions):
// wildcards anywhere, case-insensitive names, notActions subtracting from
// their own role only.
func TestGrants(t *testing.T) {
	const write = "Microsoft.ContainerService/managedClusters/agentPools/write"
	for _, tc := range []struct {
		name  string
		perms []Permission
		want  bool
	}{
		{"no role", nil, false},
		{"the action itself", []Permission{{Actions: []string{write}}}, true},
		{"another case", []Permission{{Actions: []string{strings.ToLower(write)}}}, true},
		{"everything", []Permission{{Actions: []string{"*"}}}, true},
		{"the provider's wildcard", []Permission{{Actions: []string{"Microsoft.ContainerService/*"}}}, true},
		{"the cluster's wildcard (AKS Contributor)", []Permission{{Actions: []string{"Microsoft.ContainerService/managedClusters/*"}}}, true},
		{"a wildcard in the middle", []Permission{{Actions: []string{"Microsoft.ContainerService/*/write"}}}, true},
		{"reads only", []Permission{{Actions: []string{"*/read"}}}, false},
		{"another provider", []Permission{{Actions: []string{"Microsoft.Compute/*"}}}, false},
		{"a longer action is no match", []Permission{{Actions: []string{write + "x"}}}, false},
		{"a prefix without wildcard is no match", []Permission{{Actions: []string{"Microsoft.ContainerService/managedClusters"}}}, false},
		{"subtracted by notActions", []Permission{{Actions: []string{"*"}, NotActions: []string{"Microsoft.ContainerService/managedClusters/agentPools/*"}}}, false},
		{"subtracted by a wildcard notAction", []Permission{{Actions: []string{"*"}, NotActions: []string{"*/write"}}}, false},
		{"notActions are no deny: another role grants it", []Permission{{Actions: []string{"*"}, NotActions: []string{write}}, {Actions: []string{write}}}, true},
		{"a dataAction grants no action", []Permission{{DataActions: []string{"*"}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Grants(tc.perms, write); got != tc.want {
				t.Errorf("Grants(%+v, %s) = %v, want %v", tc.perms, write, got, tc.want)
			}
		})
	}
}

func TestWildcardMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, s string
		want       bool
	}{
		{"a*b*c", "abc", true},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "axxbyy", false},
		{"ab*b", "ab", false},
		{"*", "", true},
		{"a", "a", true},
		{"a", "ab", false},
	} {
		if got := wildcardMatch(tc.pattern, tc.s); got != tc.want {
			t.Errorf("wildcardMatch(%q, %q) = %v, want %v", tc.pattern, tc.s, got, tc.want)
		}
	}
}
