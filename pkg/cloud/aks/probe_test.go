package aks

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// armServer answers the permissions list in two pages (the second by
// nextLink), or refuses it with status; it counts the pages asked for.
func armServer(t *testing.T, status int, pages ...[]Permission) (*AgentPool, *int) {
	t.Helper()
	asked := new(int)
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/providers/Microsoft.ContainerService/managedClusters/c1/providers/Microsoft.Authorization/permissions") ||
			r.URL.Query().Get("api-version") != permissionsAPIVersion {
			http.Error(w, "unexpected "+r.URL.String(), http.StatusBadRequest)
			return
		}
		if status != http.StatusOK {
			w.Header().Set("x-ms-error-code", "AuthorizationFailed")
			w.WriteHeader(status)
			_, _ = w.Write([]byte(`{"error":{"code":"AuthorizationFailed","message":"no"}}`))
			return
		}
		page := 0
		if r.URL.Query().Get("page") == "2" {
			page = 1
		}
		*asked++
		out := PermissionList{Value: pages[page]}
		if page == 0 && len(pages) > 1 {
			out.NextLink = srv.URL + r.URL.Path + "?api-version=" + permissionsAPIVersion + "&page=2"
		}
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	t.Setenv(EndpointEnv, srv.URL)
	t.Setenv(NoAuthEnv, "true")
	c, err := newClients("sub")
	if err != nil {
		t.Fatal(err)
	}
	return &AgentPool{c: c, id: clusterID{subscription: "sub", group: "rg", name: "c1"}, name: "pool"}, asked
}

func TestProbePermissions(t *testing.T) {
	var required []string
	for _, c := range Calls {
		if !c.Optional {
			required = append(required, c.Action)
		}
	}
	for _, tc := range []struct {
		name    string
		status  int
		pages   [][]Permission
		missing []string
		cannot  bool
	}{
		{name: "one role grants all", status: 200, pages: [][]Permission{{{Actions: []string{"Microsoft.ContainerService/*"}}}}},
		{name: "the grant on the second page", status: 200, pages: [][]Permission{{{Actions: []string{"*/read"}}}, {{Actions: required}}}},
		{name: "reads only", status: 200, pages: [][]Permission{{{Actions: []string{"*/read"}}}},
			missing: []string{"Microsoft.ContainerService/managedClusters/agentPools/write", "Microsoft.ContainerService/managedClusters/agentPools/upgradeNodeImageVersion/action", "Microsoft.ContainerService/managedClusters/agentPools/abort/action"}},
		{name: "no role", status: 200, pages: [][]Permission{{}}, missing: required},
		{name: "Azure refuses to answer", status: http.StatusForbidden, cannot: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, asked := armServer(t, tc.status, tc.pages...)
			p, err := a.ProbePermissions(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var missing []string
			for _, m := range p.Missing {
				if m.For != 0 || m.Call == "" {
					t.Errorf("missing %+v: every run needs it, and a call needs it", m)
				}
				missing = append(missing, m.Permission)
			}
			if !slices.Equal(missing, tc.missing) || (p.CannotAsk != "") != tc.cannot || p.Policy != Policy {
				t.Errorf("missing %v, cannot ask %q, policy %q; want %v, cannot ask %v", missing, p.CannotAsk, p.Policy, tc.missing, tc.cannot)
			}
			if !tc.cannot && *asked != len(tc.pages) {
				t.Errorf("asked for %d pages of %d", *asked, len(tc.pages))
			}
		})
	}
}
