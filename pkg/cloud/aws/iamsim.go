package aws

import (
	"context"
	"slices"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
)

// verdict is IAM's answer on one action: allowed (the zero verdict),
// denied, or neither, for want of the context keys keys.
type verdict struct {
	denied bool
	keys   []string
}

func (v verdict) allowed() bool { return !v.denied && len(v.keys) == 0 }

// worse is the verdict of an action over two resources: a denial on
// either denies, a doubt on either is a doubt.
func (v verdict) worse(o verdict) verdict {
	v.denied = v.denied || o.denied
	for _, k := range o.keys {
		if !slices.Contains(v.keys, k) {
			v.keys = append(v.keys, k)
		}
	}
	return v
}

// judge reads one decision: "allowed" is the one EvalDecision that
// permits (the others being explicitDeny and implicitDeny); a decision
// reached with MissingContextValues ("context keys that are required by
// the included input policies but that were not provided",
// types.EvaluationResult) is no denial: the caller's real request may
// carry them.
func judge(decision iamtypes.PolicyEvaluationDecisionType, missing []string) verdict {
	switch {
	case decision == iamtypes.PolicyEvaluationDecisionTypeAllowed:
		return verdict{}
	case len(missing) > 0:
		return verdict{keys: slices.Clone(missing)}
	default:
		return verdict{denied: true}
	}
}

// judgeResult reads one EvaluationResult: per resource where IAM gives
// ResourceSpecificResults (where "any missing context values are ...
// included" when ResourceArns are given), else its own decision.
func judgeResult(r iamtypes.EvaluationResult) verdict {
	if len(r.ResourceSpecificResults) == 0 {
		return judge(r.EvalDecision, r.MissingContextValues)
	}
	var v verdict
	for _, rs := range r.ResourceSpecificResults {
		v = v.worse(judge(rs.EvalResourceDecision, rs.MissingContextValues))
	}
	return v
}

// simulateAll simulates each kind's actions on its resources, one
// SimulatePrincipalPolicy a kind ("Each API in the ActionNames parameter
// is evaluated for each resource in this list", so an action is asked
// only about resources of its own type); actions on a kind the run never
// uses are not asked.
func (p *Client) simulateAll(ctx context.Context, principal string, want []action, resources map[resourceKind]resource) (map[string]verdict, error) {
	byKind := map[resourceKind][]string{}
	var kinds []resourceKind
	for _, w := range want {
		if resources[w.on].skip || slices.Contains(byKind[w.on], w.name) {
			continue
		}
		if _, seen := byKind[w.on]; !seen {
			kinds = append(kinds, w.on)
		}
		byKind[w.on] = append(byKind[w.on], w.name)
	}
	out := map[string]verdict{}
	for _, k := range kinds {
		if err := p.simulate(ctx, principal, byKind[k], resources[k], out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// simulate adds IAM's verdict on each of actions over r to out.
func (p *Client) simulate(ctx context.Context, principal string, actions []string, r resource, out map[string]verdict) error {
	pages := iam.NewSimulatePrincipalPolicyPaginator(iam.NewFromConfig(p.cfg), &iam.SimulatePrincipalPolicyInput{
		PolicySourceArn: &principal, ActionNames: actions, ResourceArns: r.arns, ContextEntries: r.context,
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return err
		}
		for _, res := range page.EvaluationResults {
			name := sdkaws.ToString(res.EvalActionName)
			out[name] = out[name].worse(judgeResult(res))
		}
	}
	return nil
}
