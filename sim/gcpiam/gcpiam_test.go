package gcpiam

import "testing"

func TestRole(t *testing.T) {
	for _, tc := range []struct {
		name    string
		grant   []string
		deny    []string
		allowed map[string]bool
	}{
		{"every permission by default", nil, nil, map[string]bool{"a.b.c": true}},
		{"a role lacking one", nil, []string{"a.b.c"}, map[string]bool{"a.b.c": false, "a.b.d": true}},
		{"a granted list", []string{"a.b.c"}, nil, map[string]bool{"a.b.c": true, "a.b.d": false}},
		{"a granted list less a denied one", []string{"a.b.c", "a.b.d"}, []string{"a.b.d"}, map[string]bool{"a.b.c": true, "a.b.d": false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r Role
			if tc.grant != nil {
				r.Grant(tc.grant)
			}
			r.Deny(tc.deny...)
			for p, want := range tc.allowed {
				if got := r.Allows(p); got != want {
					t.Errorf("Allows(%q) = %v, want %v", p, got, want)
				}
			}
		})
	}
}

func TestRoleOnAResource(t *testing.T) {
	sa := ServiceAccount("nodes@p.iam.gserviceaccount.com")
	for _, tc := range []struct {
		name                 string
		grant                []string
		resource, permission string
		want                 bool
	}{
		{"granted on the resource", []string{"a.b.c"}, sa, "iam.serviceAccounts.actAs", true},
		{"not on another resource", []string{"a.b.c"}, ServiceAccount("other@p.iam.gserviceaccount.com"), "iam.serviceAccounts.actAs", false},
		{"not on the project", []string{"a.b.c"}, "", "iam.serviceAccounts.actAs", false},
		{"the project's grant inherited", []string{"a.b.c"}, sa, "a.b.c", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r Role
			r.Grant(tc.grant)
			r.GrantOn(sa, "iam.serviceAccounts.actAs")
			got := r.Allows(tc.permission)
			if tc.resource != "" {
				got = r.AllowsOn(tc.resource, tc.permission)
			}
			if got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
