package session

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// permissionTimeout bounds the cloud's answer on permissions: a slow one
// becomes a warning, never a wait.
const permissionTimeout = 30 * time.Second

// permissionFindings asks the cloud, where its provider can ask, whether
// the caller may make each call a run of r's strategy makes: a permission
// it denies is a blocker naming it and the documented policy; a cloud
// that could not be asked is a warning.
func (s *Session) permissionFindings(ctx context.Context, r *Request, p cloud.Provider, in plan.Input, pl *plan.Plan) []check.Finding {
	prober, ok := p.(cloud.PermissionProber)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, permissionTimeout)
	defer cancel()
	perms, err := prober.ProbePermissions(ctx)
	if err != nil {
		return []check.Finding{permissionsUnchecked(r, p.Name(), oneLineOf(err), "")}
	}
	var out []check.Finding
	if perms.CannotAsk != "" { // a warning beside what was denied: only a denial blocks
		out = append(out, permissionsUnchecked(r, p.Name(), perms.CannotAsk, perms.Policy))
	}
	who := "the caller"
	if perms.Principal != "" {
		who = fmt.Sprintf("%q", perms.Principal)
	}
	need := r.strategy.Needs(in)
	if pl.Managed != nil { // the service runs the update
		need |= plan.CapManagedUpdate
	}
	for _, m := range perms.NeededBy(need) {
		out = append(out, check.Finding{
			Check: check.CheckMissingPermission, Severity: check.Blocker, Kind: "Permission", Name: m.Permission,
			Message: fmt.Sprintf("%s lacks %s, which the run needs to %s", who, m.Permission, m.Call),
			Fix:     fmt.Sprintf("grant %s to the caller (the policy: %s)", m.Permission, perms.Policy),
		})
	}
	// The cloud could not tell: a warning, as a valid policy may be
	// conditioned on what the probe cannot give.
	for _, m := range perms.UncertainFor(need) {
		out = append(out, check.Finding{
			Check: check.CheckPermissionsUnchecked, Severity: check.Warning, Kind: "Permission", Name: m.Permission,
			Message: fmt.Sprintf("cannot tell whether %s may use %s, which the run needs to %s: its policies condition on %s, which the probe could not give",
				who, m.Permission, m.Call, strings.Join(m.Keys, ", ")),
			Fix: fmt.Sprintf("make sure the conditions on %s hold for the run's resources (the policy: %s)", m.Permission, perms.Policy),
		})
	}
	return out
}

func permissionsUnchecked(r *Request, provider, why, policy string) check.Finding {
	fix := "make sure the caller may make the run's calls before it starts"
	if policy != "" {
		fix = "compare the caller's permissions with " + policy + " by hand"
	}
	return check.Finding{
		Check: check.CheckPermissionsUnchecked, Severity: check.Warning, Kind: "NodeGroup", Name: r.RecordName(),
		Message: fmt.Sprintf("provider %s could not ask whether the caller may make the run's calls: %s", provider, why),
		Fix:     fix,
	}
}
