package vmss

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/internal/azarm"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// permissionsServer answers the permissions list of scale set "ng" in
// resource group "rg" with onSet, and of the resource group with
// onGroup; refuse answers the group's (or, with onSet nil, both) with
// that status. The scale set is in westeurope; an operation status there
// is not found (404) when statusRead, else refused by ARM (403
// AuthorizationFailed), as with no role on the subscription.
func permissionsServer(t *testing.T, onSet, onGroup []azarm.Permission, refuse int, statusRead bool) *ScaleSet {
	t.Helper()
	const group = "/subscriptions/sub/resourceGroups/rg"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case group + "/providers/Microsoft.Compute/virtualMachineScaleSets/ng":
			_, _ = w.Write([]byte(`{"name":"ng","location":"westeurope"}`))
			return
		case "/subscriptions/sub/providers/Microsoft.Compute/locations/westeurope/operations/00000000-0000-0000-0000-000000000000":
			code, status := "AuthorizationFailed", http.StatusForbidden
			if statusRead {
				code, status = "NotFound", http.StatusNotFound
			}
			w.Header().Set("x-ms-error-code", code)
			w.WriteHeader(status)
			_, _ = w.Write([]byte(`{"error":{"code":"` + code + `","message":"no"}}`))
			return
		}
		scope, ok := strings.CutSuffix(r.URL.Path, "/providers/Microsoft.Authorization/permissions")
		if !ok || r.URL.Query().Get("api-version") != azarm.PermissionsAPIVersion {
			http.Error(w, "unexpected "+r.URL.String(), http.StatusBadRequest)
			return
		}
		perms := onGroup
		switch {
		case scope == group+"/providers/Microsoft.Compute/virtualMachineScaleSets/ng" && onSet != nil:
			perms = onSet
		case scope != group && scope != group+"/providers/Microsoft.Compute/virtualMachineScaleSets/ng":
			http.Error(w, "unexpected scope "+scope, http.StatusBadRequest)
			return
		case refuse != 0:
			w.Header().Set("x-ms-error-code", "AuthorizationFailed")
			w.WriteHeader(refuse)
			_, _ = w.Write([]byte(`{"error":{"code":"AuthorizationFailed","message":"no"}}`))
			return
		}
		_ = json.NewEncoder(w).Encode(azarm.PermissionList{Value: perms})
	}))
	t.Cleanup(srv.Close)
	t.Setenv(EndpointEnv, srv.URL)
	t.Setenv(NoAuthEnv, "true")
	c, err := newClients("sub")
	if err != nil {
		t.Fatal(err)
	}
	return &ScaleSet{c: c, sub: "sub", group: "rg", name: "ng"}
}

// TestProbePermissions: which actions are missing, for which strategies,
// by the roles on the scale set and on its resource group.
func TestProbePermissions(t *testing.T) {
	var all []string
	for _, c := range Calls {
		if !c.Optional { // the capacity proof's reads: denied, a warning
			all = append(all, c.Action)
		}
	}
	// The status read is asked at the location, only once the scale set
	// (its location) may be read.
	everyRun := slices.DeleteFunc(slices.Clone(all), func(a string) bool { return a == actionDelete || a == actionOperations })
	vmContributor := azarm.Permission{Actions: []string{"Microsoft.Compute/virtualMachineScaleSets/*", "Microsoft.Compute/locations/*"}}
	reader := azarm.Permission{Actions: []string{"*/read"}}
	type want struct {
		every, blueGreen []string // missing for every run, for blue/green only
	}
	for _, tc := range []struct {
		name           string
		onSet, onGroup []azarm.Permission
		refuse         int
		noStatusRead   bool // ARM refuses the operation status at the location
		want           want
		cannotAsk      bool
	}{
		{name: "Virtual Machine Contributor on the resource group", onGroup: []azarm.Permission{vmContributor}},
		{name: "Owner", onGroup: []azarm.Permission{{Actions: []string{"*"}}}},
		{name: "no role", onGroup: []azarm.Permission{}, want: want{every: everyRun, blueGreen: []string{actionDelete}}},
		{name: "a reader", onGroup: []azarm.Permission{reader},
			want: want{every: []string{actionWrite, actionDeleteVMs, actionManualUpgrade, actionReimage}, blueGreen: []string{actionDelete}}},
		{name: "a role without manualupgrade", onGroup: []azarm.Permission{{Actions: []string{"*"}, NotActions: []string{actionManualUpgrade}}},
			want: want{every: []string{actionManualUpgrade}}},
		{name: "the role on the scale set alone: blue/green's green is not covered", onSet: []azarm.Permission{vmContributor}, onGroup: []azarm.Permission{reader},
			want: want{blueGreen: []string{actionWrite, actionDeleteVMs, actionDelete}}},
		{name: "the role on the scale set, a reader of the group's green: blue/green only", onSet: []azarm.Permission{vmContributor}, onGroup: []azarm.Permission{},
			want: want{blueGreen: []string{actionRead, actionInstancesRead, actionWrite, actionDeleteVMs, actionDelete}}},
		// Learn's "Track asynchronous Azure operations": with a role at the
		// resource alone "you can start the operation but you can't track
		// its status".
		{name: "the role on the scale set and group, none on the subscription: no run can follow its operations",
			onSet: []azarm.Permission{vmContributor}, onGroup: []azarm.Permission{vmContributor}, noStatusRead: true,
			want: want{every: []string{actionOperations}}},
		{name: "Azure refuses to answer", refuse: http.StatusForbidden, cannotAsk: true},
		{name: "Azure refuses the group's: the scale set's still checked", onSet: []azarm.Permission{reader}, refuse: http.StatusForbidden, cannotAsk: true,
			want: want{every: []string{actionWrite, actionDeleteVMs, actionManualUpgrade, actionReimage}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := permissionsServer(t, tc.onSet, tc.onGroup, tc.refuse, !tc.noStatusRead)
			p, err := s.ProbePermissions(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var got want
			for _, m := range p.Missing {
				switch {
				case m.Call == "":
					t.Errorf("missing %s names no call", m.Permission)
				case m.For == plan.CapNewGroups:
					got.blueGreen = append(got.blueGreen, m.Permission)
				case m.For == 0, (m.Permission == actionManualUpgrade || m.Permission == actionReimage) && m.For == plan.CapRemoveNodes|plan.CapResize:
					got.every = append(got.every, m.Permission)
				default:
					t.Errorf("missing %s is for %v", m.Permission, m.For)
				}
			}
			if !slices.Equal(got.every, tc.want.every) || !slices.Equal(got.blueGreen, tc.want.blueGreen) || (p.CannotAsk != "") != tc.cannotAsk || p.Policy != Policy {
				t.Errorf("missing %v for every run and %v for blue/green, cannot ask %q, policy %q; want %v and %v, cannot ask %v",
					got.every, got.blueGreen, p.CannotAsk, p.Policy, tc.want.every, tc.want.blueGreen, tc.cannotAsk)
			}
			// What the plan keeps: surge never needs blue/green's, and
			// blue/green never manualupgrade.
			if n := len(p.NeededBy(plan.CapResize)); n != len(tc.want.every) {
				t.Errorf("surge needs %d missing permissions, want %d", n, len(tc.want.every))
			}
			for _, m := range p.NeededBy(plan.CapNewGroups) {
				if m.Permission == actionManualUpgrade || m.Permission == actionReimage {
					t.Errorf("blue/green needs %s, which it never calls", m.Permission)
				}
			}
		})
	}
}
