package plan

// Permissions is what the cloud said when asked whether the caller may make
// each call a run makes (AWS iam:SimulatePrincipalPolicy, GCP
// testIamPermissions): check and plan turn a missing permission the chosen
// strategy needs into a blocker before anything changes.
type Permissions struct {
	// Principal is who the cloud was asked about (a role's ARN, a service
	// account's email).
	Principal string `json:"principal,omitempty"`
	// Missing are the permissions the cloud denied.
	Missing []MissingPermission `json:"missing,omitempty"`
	// Uncertain are the permissions the cloud could not decide without
	// values the caller's policies condition on and the probe could not
	// give (AWS MissingContextValues): a warning naming the keys, never a
	// blocker.
	Uncertain []MissingPermission `json:"uncertain,omitempty"`
	// CannotAsk says why the cloud could not be asked (the caller may not
	// simulate, say); a warning, never a blocker. "" when it was asked.
	CannotAsk string `json:"cannotAsk,omitempty"`
	// Policy is where the provider's documentation lists the permissions
	// (docs/providers/aws.md#permissions).
	Policy string `json:"policy,omitempty"`
}

// MissingPermission is one permission the caller lacks, the call that needs
// it, and what the call serves: For is 0 for calls every run makes, else the
// capability whose strategies make it (blue/green's group creation needs
// CapNewGroups).
type MissingPermission struct {
	Permission string     `json:"permission"`
	Call       string     `json:"call"`
	For        Capability `json:"for,omitempty"`
	// Keys are the condition keys the cloud lacked to decide (Uncertain).
	Keys []string `json:"keys,omitempty"`
}

// NeededBy returns the missing permissions a run that needs the
// capabilities in need would use.
func (p *Permissions) NeededBy(need Capability) []MissingPermission {
	if p == nil {
		return nil
	}
	return neededBy(p.Missing, need)
}

// UncertainFor returns the undecided permissions a run that needs the
// capabilities in need would use.
func (p *Permissions) UncertainFor(need Capability) []MissingPermission {
	if p == nil {
		return nil
	}
	return neededBy(p.Uncertain, need)
}

func neededBy(all []MissingPermission, need Capability) []MissingPermission {
	var out []MissingPermission
	for _, m := range all {
		if m.For == 0 || need&m.For != 0 {
			out = append(out, m)
		}
	}
	return out
}
