package session

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// prober is a provider whose cloud answers the permission probe with
// perms or err.
type prober struct {
	perms *plan.Permissions
	err   error
}

func (prober) Name() string     { return "test" }
func (prober) Describe() string { return "test" }
func (p prober) ProbePermissions(context.Context) (*plan.Permissions, error) {
	return p.perms, p.err
}

func TestPermissionFindings(t *testing.T) {
	missing := []plan.MissingPermission{
		{Permission: "svc.groups.update", Call: "resize the group"},
		{Permission: "svc.groups.create", Call: "create green's group", For: plan.CapNewGroups},
	}
	for _, tc := range []struct {
		name     string
		strategy string
		p        prober
		want     []string // check: object, in order
	}{
		{"every permission granted", "surge", prober{perms: &plan.Permissions{Policy: "docs"}}, nil},
		{"surge needs only what every run does", "surge", prober{perms: &plan.Permissions{Missing: missing, Policy: "docs"}},
			[]string{"missing-permission: Permission/svc.groups.update"}},
		{"blue/green needs its group's too", "blue-green", prober{perms: &plan.Permissions{Missing: missing, Policy: "docs"}},
			[]string{"missing-permission: Permission/svc.groups.update", "missing-permission: Permission/svc.groups.create"}},
		{"the caller may not ask", "surge", prober{perms: &plan.Permissions{CannotAsk: "no", Policy: "docs"}},
			[]string{"permissions-unchecked: NodeGroup/ng"}},
		{"some untold, some denied: both", "surge", prober{perms: &plan.Permissions{CannotAsk: "no", Missing: missing, Policy: "docs"}},
			[]string{"permissions-unchecked: NodeGroup/ng", "missing-permission: Permission/svc.groups.update"}},
		{"the cloud did not answer", "surge", prober{err: errors.New("timeout")}, []string{"permissions-unchecked: NodeGroup/ng"}},
		{"a permission the cloud could not tell is a warning", "surge", prober{perms: &plan.Permissions{Policy: "docs",
			Uncertain: []plan.MissingPermission{{Permission: "svc:Update", Call: "resize", Keys: []string{"svc:ResourceTag/team"}}},
		}}, []string{"permissions-unchecked: Permission/svc:Update"}},
		{"an undecided permission blue/green alone needs", "surge", prober{perms: &plan.Permissions{Policy: "docs",
			Uncertain: []plan.MissingPermission{{Permission: "svc:Create", Call: "create", For: plan.CapNewGroups, Keys: []string{"k"}}},
		}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := plan.LookupStrategy(tc.strategy)
			if err != nil {
				t.Fatal(err)
			}
			r := &Request{strategy: st}
			r.NodeGroup = "ng"
			var got []string
			for _, f := range (&Session{}).permissionFindings(context.Background(), r, tc.p, plan.Input{}, &plan.Plan{}) {
				got = append(got, f.Check+": "+f.Object())
				if f.Check == check.CheckMissingPermission && (f.Severity != check.Blocker || !strings.Contains(f.Fix, "docs") || !strings.Contains(f.Message, f.Name)) {
					t.Errorf("finding %+v: want a blocker naming the permission and the policy", f)
				}
				if f.Kind == "Permission" && f.Check == check.CheckPermissionsUnchecked && (f.Severity != check.Warning || !strings.Contains(f.Message, "svc:ResourceTag/team")) {
					t.Errorf("finding %+v: want a warning naming the condition key", f)
				}
			}
			if strings.Join(got, ", ") != strings.Join(tc.want, ", ") {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestForceDoesNotLiftAMissingPermission: --force is about pods; a
// permission the cloud denied, or a group its service reports degraded,
// yields only to its --ignore-check.
func TestForceDoesNotLiftAMissingPermission(t *testing.T) {
	for _, name := range []string{check.CheckMissingPermission, check.CheckGroupDegraded} {
		t.Run(name, func(t *testing.T) {
			f := check.Finding{Check: name, Severity: check.Blocker, Kind: "Permission", Name: "a:B", Message: "m", Fix: "f"}
			p := &plan.Plan{Findings: []check.Finding{f}}
			forced, ignored := &Request{}, &Request{}
			forced.Force, ignored.IgnoreChecks = true, []string{name}
			if err := forced.RefuseBlockers(p, "refusing to run"); err == nil || strings.Contains(err.Error(), "--force") {
				t.Errorf("--force lifted %s, or the refusal offers it: %v", name, err)
			}
			if err := ignored.RefuseBlockers(p, "refusing to run"); err != nil {
				t.Errorf("--ignore-check %s did not lift it: %v", name, err)
			}
		})
	}
}
