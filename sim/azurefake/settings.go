package azurefake

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// PoolAPIVersion is the newer AKS API version the fake also serves an
// agent pool's GET and PUT at: its AgentPoolUpgradeSettings has
// maxUnavailable and undrainableNodeBehavior, which APIVersion's (the
// SDK's armcontainerservice/v6 model) lacks
// (azure-rest-api-specs, specification/containerservice/resource-manager/Microsoft.ContainerService/aks/stable/2025-05-01).
const PoolAPIVersion = "2025-05-01"

// Undrainable node behaviours (AgentPoolUpgradeSettings.undrainableNodeBehavior,
// enum UndrainableNodeBehavior: "Cordon", "Schedule"; armcontainerservice
// v6's beta CHANGELOG: UndrainableNodeBehaviorCordon,
// UndrainableNodeBehaviorSchedule). Schedule is AKS's default.
const (
	undrainableCordon   = "Cordon"
	undrainableSchedule = "Schedule"
)

// QuarantineLabel is the label AKS puts on a node it could not drain
// under undrainableNodeBehavior Cordon, with QuarantineValue
// (https://learn.microsoft.com/en-us/azure/aks/upgrade-aks-cluster#set-node-drain-behavior:
// "blocked nodes are cordoned and labeled
// kubernetes.azure.com/upgrade-status:Quarantined").
const (
	QuarantineLabel = "kubernetes.azure.com/upgrade-status"
	QuarantineValue = "Quarantined"
)

// upgradeExtra are the upgrade settings of the newer API version the
// SDK's model lacks: the fake's own type, after the REST spec's
// AgentPoolUpgradeSettings. nil is unset.
type upgradeExtra struct {
	MaxUnavailable          *string `json:"maxUnavailable,omitempty"`
	UndrainableNodeBehavior *string `json:"undrainableNodeBehavior,omitempty"`
}

// servesVersion reports whether op is served at API version v: every
// operation at its own, and an agent pool's read and write at
// PoolAPIVersion too (ARM serves a resource at each version its resource
// provider registers).
func servesVersion(op, v string) bool {
	return v == apiVersionOf(op) || v == PoolAPIVersion && (op == "agentPools/read" || op == "agentPools/write")
}

// splitExtra takes the newer version's fields out of a PUT's body: the
// body the SDK's model reads, and the fields. A body of APIVersion
// carries none (the model's check refuses them there).
func splitExtra(body []byte, version string) ([]byte, upgradeExtra, *armError) {
	var ex upgradeExtra
	if version != PoolAPIVersion {
		return body, ex, nil
	}
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, ex, errorf(http.StatusBadRequest, "InvalidRequestContent", "The request content was invalid and could not be deserialized: %v", err)
	}
	props, _ := doc["properties"].(map[string]any)
	us, _ := props["upgradeSettings"].(map[string]any)
	if us == nil {
		return body, ex, nil
	}
	raw, _ := json.Marshal(us)
	if err := json.Unmarshal(raw, &ex); err != nil {
		return nil, ex, errorf(http.StatusBadRequest, "InvalidRequestContent", "The request content was invalid and could not be deserialized: %v", err)
	}
	delete(us, "maxUnavailable")
	delete(us, "undrainableNodeBehavior")
	out, _ := json.Marshal(doc)
	return out, ex, nil
}

// checkExtra refuses what AKS refuses of the newer settings: maxUnavailable
// "an integer (e.g. '1') or a percentage (e.g. '5%')", an
// undrainableNodeBehavior of the enum, and maxSurge and maxUnavailable
// both 0, where no node could be upgraded ("maxSurge and maxUnavailable
// cannot both be 0",
// https://learn.microsoft.com/en-us/azure/aks/upgrade-aks-cluster#customize-unavailable-nodes).
func checkExtra(ex upgradeExtra, maxSurge *string) *armError {
	if v := ex.MaxUnavailable; v != nil {
		n, err := strconv.Atoi(strings.TrimSuffix(*v, "%"))
		if err != nil || n < 0 || (strings.HasSuffix(*v, "%") && n > 100) {
			return errorf(http.StatusBadRequest, "InvalidParameter", "The value of parameter agentPoolProfile.upgradeSettings.maxUnavailable is invalid: %q. It must be an integer or a percentage.", *v)
		}
	}
	if v := ex.UndrainableNodeBehavior; v != nil && *v != undrainableCordon && *v != undrainableSchedule {
		return errorf(http.StatusBadRequest, "InvalidParameter", "The value of parameter agentPoolProfile.upgradeSettings.undrainableNodeBehavior is invalid: %q. Allowed values are Cordon and Schedule.", *v)
	}
	if zero(maxSurge) && ex.MaxUnavailable != nil && zero(ex.MaxUnavailable) {
		return errorf(http.StatusBadRequest, "InvalidParameter", "maxSurge and maxUnavailable cannot both be 0.")
	}
	return nil
}

func zero(v *string) bool {
	return v != nil && (*v == "0" || *v == "0%")
}

// keptExtra are the newer settings after a PUT: AKS keeps a field the PUT
// leaves out, as it does the model's (keptSettings), and a PUT of the
// older version, which cannot name them, keeps them all.
func keptExtra(have, in upgradeExtra) upgradeExtra {
	if in.MaxUnavailable != nil {
		have.MaxUnavailable = in.MaxUnavailable
	}
	if in.UndrainableNodeBehavior != nil {
		have.UndrainableNodeBehavior = in.UndrainableNodeBehavior
	}
	return have
}

// poolDoc is the pool as GET answers it at API version v: the model's
// fields, and at PoolAPIVersion the newer settings in its upgradeSettings.
func (s *Server) poolDoc(p *pool, v string) any {
	view := s.poolView(p)
	if v != PoolAPIVersion || p.extra == (upgradeExtra{}) {
		return view
	}
	raw, _ := json.Marshal(view)
	var doc map[string]any
	_ = json.Unmarshal(raw, &doc)
	props, _ := doc["properties"].(map[string]any)
	us, _ := props["upgradeSettings"].(map[string]any)
	if us == nil {
		us = map[string]any{}
		props["upgradeSettings"] = us
	}
	if v := p.extra.MaxUnavailable; v != nil {
		us["maxUnavailable"] = *v
	}
	if v := p.extra.UndrainableNodeBehavior; v != nil {
		us["undrainableNodeBehavior"] = *v
	}
	return doc
}

// quarantine leaves a node AKS could not drain cordoned and labelled
// QuarantineLabel=QuarantineValue, as undrainableNodeBehavior Cordon does.
func (s *Server) quarantine(ctx context.Context, name string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := s.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels[QuarantineLabel], n.Spec.Unschedulable = QuarantineValue, true
		_, err = s.kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
}
