package awsfake

import (
	"fmt"
	"regexp"
	"slices"

	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
)

// The constraints of EKS's models on the node group requests the fake
// serves that the SDK does not check on the client, refused as EKS refuses
// them (400 InvalidParameterException): enums from aws-sdk-go-v2
// service/eks@v1.105.6 types/enums.go, lengths and limits from the EKS API
// Reference (https://docs.aws.amazon.com/eks/latest/APIReference/) and User
// Guide. Tags are checkTags' (eks_nodegroup.go); sizes and the update
// configuration's ranges checkScaling's and checkUpdateConfig's.

// nodegroupNameRE is a node group's name: "Node group names can't be
// longer than 63 characters. It must start with letter or digit, but can
// also include hyphens and underscores for the remaining characters"
// (User Guide, create-managed-node-group).
var nodegroupNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$`)

// maxTaints is the limit of taints on a node group: "A maximum of 50
// taints are allowed per node group" (User Guide,
// node-taints-managed-node-groups).
const maxTaints = 50

// checkCreateModel holds a CreateNodegroup body to the model.
func checkCreateModel(req Nodegroup) error {
	if !nodegroupNameRE.MatchString(req.NodegroupName) {
		return invalidParam("nodegroupName %q must be 1 to 63 letters, digits, hyphens and underscores, starting with a letter or digit", req.NodegroupName)
	}
	// API Reference, CreateNodegroup: amiType, capacityType (types
	// AMITypes, CapacityTypes).
	if err := enumParam("amiType", req.AmiType, ekstypes.AMITypes("").Values()); err != nil {
		return err
	}
	if err := enumParam("capacityType", req.CapacityType, ekstypes.CapacityTypes("").Values()); err != nil {
		return err
	}
	if u := req.UpdateConfig; u != nil {
		if err := enumParam("updateConfig.updateStrategy", u.UpdateStrategy, ekstypes.NodegroupUpdateStrategies("").Values()); err != nil {
			return err
		}
	}
	if err := checkLabels(req.Labels); err != nil {
		return err
	}
	if err := checkRemoteAndRepair(req); err != nil {
		return err
	}
	return checkTaintsModel(req.Taints)
}

// checkRemoteAndRepair: no remoteAccess with a launch template (API
// Reference, CreateNodegroup: remoteAccess, "If you specify
// launchTemplate, then don't specify remoteAccess"); of each pair of
// NodeRepairConfig's limits, a count or a percentage (API Reference,
// NodeRepairConfig: "When using this, you cannot also set ...").
func checkRemoteAndRepair(req Nodegroup) error {
	if req.RemoteAccess != nil && req.LaunchTemplate != nil {
		return invalidParam("Remote access configuration cannot be specified with a launch template.")
	}
	if r := req.NodeRepairConfig; r != nil {
		if r.MaxParallelNodesRepairedCount != nil && r.MaxParallelNodesRepairedPercentage != nil {
			return invalidParam("nodeRepairConfig: set maxParallelNodesRepairedCount or maxParallelNodesRepairedPercentage, not both")
		}
		if r.MaxUnhealthyNodeThresholdCount != nil && r.MaxUnhealthyNodeThresholdPercentage != nil {
			return invalidParam("nodeRepairConfig: set maxUnhealthyNodeThresholdCount or maxUnhealthyNodeThresholdPercentage, not both")
		}
	}
	return nil
}

// checkConfigModel holds an UpdateNodegroupConfig body to the model.
func checkConfigModel(req configRequest) error {
	if u := req.UpdateConfig; u != nil {
		if err := enumParam("updateConfig.updateStrategy", u.UpdateStrategy, ekstypes.NodegroupUpdateStrategies("").Values()); err != nil {
			return err
		}
	}
	if l := req.Labels; l != nil {
		if err := checkLabels(l.AddOrUpdateLabels); err != nil {
			return err
		}
		for _, k := range l.RemoveLabels {
			if err := checkLabels(map[string]string{k: "x"}); err != nil {
				return err
			}
		}
	}
	if t := req.Taints; t != nil {
		if err := checkTaintsModel(t.AddOrUpdateTaints); err != nil {
			return err
		}
		return checkTaintsModel(t.RemoveTaints)
	}
	return nil
}

// enumParam refuses a value outside an enum of the model; "" is the
// member left out.
func enumParam[T ~string](member, v string, vals []T) error {
	if v == "" || slices.Contains(enumValues(vals), v) {
		return nil
	}
	return invalidParam("%s %q is not one of %v", member, v, vals)
}

// checkLabels: label keys and values are 1 to 63 characters (API
// Reference, CreateNodegroup and UpdateLabelsPayload: labels, "Key Length
// Constraints: Minimum length of 1. Maximum length of 63", "Value Length
// Constraints: Minimum length of 1. Maximum length of 63").
func checkLabels(labels map[string]string) error {
	for k, v := range labels {
		if len(k) < 1 || len(k) > 63 || len(v) < 1 || len(v) > 63 {
			return invalidParam("label %q=%q: keys and values must be 1 to 63 characters", k, v)
		}
	}
	return nil
}

// checkTaintsModel: at most maxTaints; keys of 1 to 63 characters, values
// of 0 to 63, effect one of TaintEffect's (API Reference, Taint).
func checkTaintsModel(taints []Taint) error {
	if len(taints) > maxTaints {
		return invalidParam("%d taints: a node group has at most %d", len(taints), maxTaints)
	}
	for _, t := range taints {
		if len(t.Key) < 1 || len(t.Key) > 63 || len(t.Value) > 63 {
			return invalidParam("taint %q: keys must be 1 to 63 characters, values at most 63", fmt.Sprintf("%s=%s", t.Key, t.Value))
		}
		if err := enumParam("taint effect", t.Effect, ekstypes.TaintEffect("").Values()); err != nil {
			return err
		}
	}
	return nil
}
