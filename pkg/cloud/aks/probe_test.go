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
// An operation status of the location is not found (404) when
// statusRead, else refused by ARM (403 AuthorizationFailed), as with a
// role on the cluster alone.
func armServer(t *testing.T, status int, statusRead bool, pages ...[]Permission) (*AgentPool, *int) {
	t.Helper()
	asked := new(int)
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/subscriptions/sub/providers/Microsoft.ContainerService/locations/westeurope/operations/"+unknownOp &&
			r.URL.Query().Get("api-version") == operationsAPIVersion {
			answerStatusRead(w, statusRead)
			return
		}
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
	return &AgentPool{c: c, id: clusterID{subscription: "sub", group: "rg", name: "c1"}, name: "pool", location: "westeurope"}, asked
}

// unknownOp is the operation ID azarm.StatusReadable asks for.
const unknownOp = "00000000-0000-0000-0000-000000000000"

// answerStatusRead answers an unknown operation's status as AKS does
// (404) or, without the read at the subscription, as ARM does (403
// AuthorizationFailed).
func answerStatusRead(w http.ResponseWriter, allowed bool) {
	code, status := "AuthorizationFailed", http.StatusForbidden
	if allowed {
		code, status = "NotFound", http.StatusNotFound
	}
	w.Header().Set("x-ms-error-code", code)
	w.WriteHeader(status)
	_, _ = w.Write([]byte(`{"error":{"code":"` + code + `","message":"no"}}`))
}

func TestProbePermissions(t *testing.T) {
	const follow = "Microsoft.ContainerService/locations/operations/read"
	var required []string
	for _, c := range Calls {
		if !c.Optional && c.Action != follow {
			required = append(required, c.Action)
		}
	}
	required = append(required, follow) // asked at the location, after the cluster's
	for _, tc := range []struct {
		name     string
		status   int
		noFollow bool // ARM refuses the operation status at the location
		pages    [][]Permission
		missing  []string
		cannot   bool
	}{
		{name: "one role grants all", status: 200, pages: [][]Permission{{{Actions: []string{"Microsoft.ContainerService/*"}}}}},
		{name: "the grant on the second page", status: 200, pages: [][]Permission{{{Actions: []string{"*/read"}}}, {{Actions: required}}}},
		{name: "reads only", status: 200, pages: [][]Permission{{{Actions: []string{"*/read"}}}},
			missing: []string{"Microsoft.ContainerService/managedClusters/agentPools/write", "Microsoft.ContainerService/managedClusters/agentPools/upgradeNodeImageVersion/action", "Microsoft.ContainerService/managedClusters/agentPools/abort/action", "Microsoft.ContainerService/managedClusters/agentPools/delete"}},
		{name: "no role", status: 200, noFollow: true, pages: [][]Permission{{}}, missing: required},
		// The cluster's list answers the roles on it, so a role of "*" on
		// the cluster alone lists the status read: ARM still refuses it
		// at the location.
		{name: "every action on the cluster alone: it cannot follow the upgrade", status: 200, noFollow: true,
			pages: [][]Permission{{{Actions: []string{"*"}}}}, missing: []string{follow}},
		{name: "Azure refuses to answer", status: http.StatusForbidden, cannot: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, asked := armServer(t, tc.status, !tc.noFollow, tc.pages...)
			p, err := a.ProbePermissions(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var missing []string
			for _, m := range p.Missing {
				// Blue/green's delete is For its capability; the rest every run's.
				if blueGreenOnly := m.Permission == "Microsoft.ContainerService/managedClusters/agentPools/delete"; (m.For != 0) != blueGreenOnly || m.Call == "" {
					t.Errorf("missing %+v: For %v, want blue/green's capability only for agentPools/delete; a call needs it", m, m.For)
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
