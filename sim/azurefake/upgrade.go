package azurefake

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	armcs "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"
)

// target is where an upgrade moves a pool: a Kubernetes version and a
// node image, and the provisioning state it runs under.
type target struct {
	version, image, state string
}

// pending is the upgrade a Failed or Canceled pool did not finish; the
// same request again (or a PUT of the pool with no change) finishes it.
func (p *pool) pendingTarget() *target {
	props := p.model.Properties
	if *props.CurrentOrchestratorVersion != *props.OrchestratorVersion {
		return &target{version: *props.OrchestratorVersion, image: p.latest, state: stateUpgrading}
	}
	for _, m := range p.nodes {
		if m.image != *props.NodeImageVersion || m.surge {
			return &target{version: *props.OrchestratorVersion, image: *props.NodeImageVersion, state: stateUpgradeImage}
		}
	}
	return nil
}

// busyLocked is AKS's answer to a change of a pool whose operation runs:
// 409 OperationNotAllowed (issue 54's facts: "a pool busy updating
// answers 409 OperationNotAllowed to other operations";
// https://learn.microsoft.com/en-us/troubleshoot/azure/azure-kubernetes/create-upgrade-delete/error-code-operationnotallowed).
func busyLocked(p *pool) *armError {
	if p.op == nil {
		return nil
	}
	return errorf(http.StatusConflict, "OperationNotAllowed", "Operation is not allowed because there's an in progress %s operation on agent pool %q started at %s. Please wait for it to finish before starting a new operation.",
		strings.ToLower(*p.model.Properties.ProvisioningState), *p.model.Name, p.op.start.Format(time.RFC3339))
}

// putPool answers PUT agentPools/{p}: the body is read with the SDK's
// own model (fields it does not know are refused), a Kubernetes version
// above the control plane's, below the pool's or not offered is refused,
// and the change starts an operation: an upgrade for a new version (with
// the latest node image: "upgrading the Kubernetes version also upgrades
// the node image", https://learn.microsoft.com/en-us/azure/aks/node-image-upgrade),
// the unfinished upgrade again on a Failed or Canceled pool, or an update
// of the settings alone.
func (s *Server) putPool(q *request) {
	version := q.r.URL.Query().Get("api-version")
	body, extra, aerr := splitExtra(q.body, version)
	if aerr != nil {
		writeError(q.w, aerr)
		return
	}
	var in armcs.AgentPool
	if err := decodeModel(body, &in); err != nil {
		writeError(q.w, err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p, aerr := s.poolOfLocked(q)
	if aerr != nil {
		writeError(q.w, errorf(http.StatusBadRequest, "InvalidParameter", "the fake creates no agent pools: %s", aerr.message))
		return
	}
	if aerr := busyLocked(p); aerr != nil {
		writeError(q.w, aerr)
		return
	}
	if aerr := ifMatchLocked(q, p); aerr != nil {
		writeError(q.w, aerr)
		return
	}
	t, aerr := s.putTargetLocked(p, in.Properties)
	if aerr != nil {
		writeError(q.w, aerr)
		return
	}
	if aerr := s.putSettingsLocked(p, in.Properties, extra); aerr != nil {
		writeError(q.w, aerr)
		return
	}
	var o *operation
	switch {
	case t != nil:
		o = s.beginUpgradeLocked(p, *t)
	default:
		o = s.startOpLocked(p, "update")
		p.model.Properties.ProvisioningState = ptr(stateUpdating)
		s.wg.Add(1)
		go s.settle(o)
	}
	s.newETagLocked(p)
	s.asyncHeaders(q.w, o)
	writeJSON(q.w, http.StatusOK, s.poolDoc(p, version))
}

// putSettingsLocked checks and keeps a PUT's upgrade settings: the
// model's and the newer version's, each field the PUT leaves out kept.
func (s *Server) putSettingsLocked(p *pool, in *armcs.ManagedClusterAgentPoolProfileProperties, extra upgradeExtra) *armError {
	var u *armcs.AgentPoolUpgradeSettings
	if in != nil {
		u = in.UpgradeSettings
	}
	if u == nil && extra == (upgradeExtra{}) {
		return nil
	}
	if u == nil {
		u = &armcs.AgentPoolUpgradeSettings{}
	}
	kept := keptSettings(p.model.Properties.UpgradeSettings, u)
	aerr := checkSurge(u.MaxSurge)
	if aerr == nil {
		aerr = spotSurge(p, u.MaxSurge)
	}
	if aerr == nil {
		aerr = checkExtra(keptExtra(p.extra, extra), kept.MaxSurge)
	}
	if aerr != nil {
		return aerr
	}
	p.model.Properties.UpgradeSettings, p.extra = kept, keptExtra(p.extra, extra)
	return nil
}

// putTargetLocked is the upgrade a PUT asks for, nil for none.
func (s *Server) putTargetLocked(p *pool, in *armcs.ManagedClusterAgentPoolProfileProperties) (*target, *armError) {
	props := p.model.Properties
	if in == nil || in.OrchestratorVersion == nil || *in.OrchestratorVersion == *props.OrchestratorVersion {
		return p.pendingIfEnded(), nil
	}
	v, same := resolveMinor(*in.OrchestratorVersion, *props.CurrentOrchestratorVersion, p.c.version, p.c.versions)
	switch {
	case same:
		props.OrchestratorVersion = in.OrchestratorVersion
		return p.pendingIfEnded(), nil
	case v == "":
		return nil, errorf(http.StatusBadRequest, "AgentPoolK8sVersionNotSupported", "Version %s is not supported in this region.", *in.OrchestratorVersion)
	case compareVersions(v, p.c.version) > 0:
		// "Node pool version ... and control plane version ... are
		// incompatible" (https://learn.microsoft.com/en-us/troubleshoot/azure/azure-kubernetes/create-upgrade-delete/node-pool-version-control-plane-incompatible);
		// AKS's rule: a node pool's version is at most the control plane's.
		return nil, errorf(http.StatusBadRequest, "NodePoolMcVersionIncompatible", "Node pool version %s and control plane version %s are incompatible. Node pool version cannot be greater than control plane version.", v, p.c.version)
	case compareVersions(v, *props.CurrentOrchestratorVersion) < 0:
		// AKS does not downgrade a pool
		// (https://learn.microsoft.com/en-us/azure/aks/upgrade-aks-cluster:
		// "you can't downgrade"); the code is the fake's, not documented.
		return nil, errorf(http.StatusBadRequest, "NotAllowedAgentPoolVersionDowngrade", "Downgrading agent pool %q from %s to %s is not allowed.", *p.model.Name, *props.CurrentOrchestratorVersion, v)
	case !contains(p.c.versions, v) && v != p.c.version:
		return nil, errorf(http.StatusBadRequest, "AgentPoolK8sVersionNotSupported", "Version %s is not supported in this region.", v)
	}
	props.OrchestratorVersion = ptr(v)
	return &target{version: v, image: p.latest, state: stateUpgrading}, nil
}

// pendingIfEnded is the unfinished upgrade of a Failed or Canceled pool:
// a PUT with no change reconciles it, AKS's recovery of a failed upgrade
// (issue 54: "a recovery that is an undocumented PUT with no changes",
// Azure/AKS#3384).
func (p *pool) pendingIfEnded() *target {
	st := *p.model.Properties.ProvisioningState
	if st != stateFailed && st != stateCanceled {
		return nil
	}
	return p.pendingTarget()
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// checkSurge checks maxSurge as the model describes it: "an integer (e.g.
// '5') or a percentage (e.g. '50%')" (AgentPoolUpgradeSettings.MaxSurge).
func checkSurge(v *string) *armError {
	if v == nil {
		return nil
	}
	n, err := strconv.Atoi(strings.TrimSuffix(*v, "%"))
	if err != nil || n < 0 || (strings.HasSuffix(*v, "%") && n > 100) {
		return errorf(http.StatusBadRequest, "InvalidParameter", "The value of parameter agentPoolProfile.upgradeSettings.maxSurge is invalid: %q. It must be an integer or a percentage.", *v)
	}
	return nil
}

// keptSettings are a pool's upgrade settings after a PUT of in: AKS keeps
// each field the PUT leaves out (null in the body), so only a value sent
// replaces one, as a PUT of a pool read without a field and sent back
// shows (issue 65's reading of AKS 2025-02-01; the fake keeps them so the
// provider must name AKS's default to clear one).
func keptSettings(have, in *armcs.AgentPoolUpgradeSettings) *armcs.AgentPoolUpgradeSettings {
	if have == nil {
		return in
	}
	out := *have
	if in.MaxSurge != nil {
		out.MaxSurge = in.MaxSurge
	}
	if in.DrainTimeoutInMinutes != nil {
		out.DrainTimeoutInMinutes = in.DrainTimeoutInMinutes
	}
	if in.NodeSoakDurationInMinutes != nil {
		out.NodeSoakDurationInMinutes = in.NodeSoakDurationInMinutes
	}
	return &out
}

// spotSurge refuses a maxSurge on a Spot pool: "There are no surge nodes
// available for Spot node pool upgrades"; AKS upgrades them with "a cordon
// and an eviction notice, but no drain"
// (https://learn.microsoft.com/en-us/azure/aks/spot-node-pool#upgrade-a-spot-node-pool).
func spotSurge(p *pool, v *string) *armError {
	if v == nil || *v == "" || p.model.Properties.ScaleSetPriority == nil || *p.model.Properties.ScaleSetPriority != armcs.ScaleSetPrioritySpot {
		return nil
	}
	return errorf(http.StatusBadRequest, "InvalidParameter", "The value of parameter agentPoolProfile.upgradeSettings.maxSurge is invalid: %q. Spot node pools do not support max surge.", *v)
}

// upgradeNodeImage answers agentPools/{p}/upgradeNodeImageVersion: the
// pool's machines move to the latest node image (202 and an operation).
func (s *Server) upgradeNodeImage(q *request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, aerr := s.poolOfLocked(q)
	if aerr == nil {
		aerr = busyLocked(p)
	}
	if aerr != nil {
		writeError(q.w, aerr)
		return
	}
	t := target{version: *p.model.Properties.OrchestratorVersion, image: p.latest, state: stateUpgradeImage}
	if pt := p.pendingIfEnded(); pt != nil {
		t.version = pt.version
	}
	o := s.beginUpgradeLocked(p, t)
	s.asyncHeaders(q.w, o)
	writeJSON(q.w, http.StatusAccepted, s.poolView(p))
}

// abort answers agentPools/{p}/abort: the running operation stops at its
// next node, the pool Canceling then Canceled; with none running, 409
// ("If the operation completes before cancellation can take place, a 409
// error code is returned", AgentPoolsClient.BeginAbortLatestOperation;
// the code is the fake's).
func (s *Server) abort(q *request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, aerr := s.poolOfLocked(q)
	if aerr != nil {
		writeError(q.w, aerr)
		return
	}
	if p.op == nil {
		writeError(q.w, errorf(http.StatusConflict, "OperationNotAllowed", "There is no ongoing operation on agent pool %q to abort.", *p.model.Name))
		return
	}
	p.op.abort = true
	if p.op.cancel != nil {
		p.op.cancel()
	}
	p.model.Properties.ProvisioningState = ptr(stateCanceling)
	s.logf("pool %s: abort of %s", *p.model.Name, p.op.kind)
	q.w.WriteHeader(http.StatusNoContent)
}

// settle ends a settings update after SettingsDuration.
func (s *Server) settle(o *operation) {
	defer s.wg.Done()
	_ = sleep(s.ctx, s.opts.SettingsDuration)
	s.mu.Lock()
	defer s.mu.Unlock()
	if o.abort {
		o.pool.model.Properties.ProvisioningState = ptr(stateCanceled)
		s.endOpLocked(o, opCanceled, nil)
		return
	}
	o.pool.model.Properties.ProvisioningState = ptr(stateSucceeded)
	s.endOpLocked(o, opSucceeded, nil)
}

// beginUpgradeLocked starts the upgrade to t.
func (s *Server) beginUpgradeLocked(p *pool, t target) *operation {
	o := s.startOpLocked(p, t.state)
	p.model.Properties.ProvisioningState = ptr(t.state)
	ctx, cancel := context.WithCancel(s.ctx)
	o.cancel = cancel
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer cancel()
		err := s.upgrade(ctx, p, o, t)
		s.finish(p, o, t, err)
	}()
	return o
}

// finish records the upgrade's end on the pool and the operation.
func (s *Server) finish(p *pool, o *operation, t target, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var de *drainError
	var eq *errQuarantined
	var ae *armError
	switch {
	case err == nil:
		p.model.Properties.CurrentOrchestratorVersion, p.model.Properties.NodeImageVersion = ptr(t.version), ptr(t.image)
		p.model.Properties.ProvisioningState = ptr(stateSucceeded)
		s.endOpLocked(o, opSucceeded, nil)
	case o.abort:
		p.model.Properties.ProvisioningState = ptr(stateCanceled)
		s.endOpLocked(o, opCanceled, errorf(http.StatusOK, "Canceled", "The operation was canceled by an abort request."))
	case errors.As(err, &eq):
		p.model.Properties.ProvisioningState = ptr(stateCanceled)
		s.endOpLocked(o, opCanceled, errorf(http.StatusOK, "NodesQuarantined", "%s", eq.Error()))
	case errors.As(err, &ae): // a refusal of AKS's own (network.go)
		p.model.Properties.ProvisioningState = ptr(stateFailed)
		s.endOpLocked(o, opFailed, ae)
	case errors.As(err, &de):
		p.model.Properties.ProvisioningState = ptr(stateFailed)
		s.endOpLocked(o, opFailed, errorf(http.StatusBadRequest, "UpgradeFailed", "%s", de.Error()))
	default:
		p.model.Properties.ProvisioningState = ptr(stateFailed)
		s.endOpLocked(o, opFailed, errorf(http.StatusInternalServerError, "InternalOperationError", "%s", err.Error()))
	}
	s.logf("pool %s: %s %s", *p.model.Name, o.kind, o.status)
}

// upgradeRules are the pool's upgrade settings as an upgrade applies
// them.
type upgradeRules struct {
	// surge machines are added first; surge+unavailable old ones are
	// upgraded at a time.
	surge, unavailable int
	drain, soak        time.Duration
	// cordon quarantines a node whose drain times out
	// (undrainableNodeBehavior Cordon) instead of failing the upgrade.
	cordon bool
}

// settingsLocked are the pool's upgrade settings with AKS's defaults:
// maxSurge 10% ("If not specified, the default is 10%"; "fractional
// nodes are rounded up"), maxUnavailable 0 ("If not specified, the
// default is 0", a number or a percentage rounded up alike),
// drainTimeoutInMinutes 30, nodeSoakDurationInMinutes 0, undrainable
// nodes Schedule (AgentPoolUpgradeSettings of PoolAPIVersion). A maxSurge
// of 0 adds no machine, allowed only beside a maxUnavailable (checkExtra).
func (s *Server) settingsLocked(p *pool) upgradeRules {
	u := p.model.Properties.UpgradeSettings
	if u == nil {
		u = &armcs.AgentPoolUpgradeSettings{}
	}
	count := 0
	for _, m := range p.nodes {
		if !m.surge {
			count++
		}
	}
	r := upgradeRules{drain: 30 * s.opts.MinuteIs, unavailable: nodesOf(p.extra.MaxUnavailable, "0", count)}
	r.surge = nodesOf(u.MaxSurge, "10%", count)
	if r.surge == 0 && r.unavailable == 0 {
		r.surge = 1
	}
	if u.DrainTimeoutInMinutes != nil {
		r.drain = time.Duration(*u.DrainTimeoutInMinutes) * s.opts.MinuteIs
	}
	if u.NodeSoakDurationInMinutes != nil {
		r.soak = time.Duration(*u.NodeSoakDurationInMinutes) * s.opts.MinuteIs
	}
	r.cordon = p.extra.UndrainableNodeBehavior != nil && *p.extra.UndrainableNodeBehavior == undrainableCordon
	return r
}

// nodesOf is a setting of nodes (a number, or a percentage of count
// rounded up) at most count; def where unset.
func nodesOf(v *string, def string, count int) int {
	s := def
	if v != nil && *v != "" {
		s = *v
	}
	n, _ := strconv.Atoi(strings.TrimSuffix(s, "%"))
	if strings.HasSuffix(s, "%") {
		n = int(math.Ceil(float64(count) * float64(n) / 100))
	}
	return min(n, max(count, 1))
}

// decodeModel reads body into v, the SDK's model, and refuses fields the
// model does not have: what the SDK's serializer writes back of it must
// hold every key the body has.
func decodeModel(body []byte, v json.Unmarshaler) *armError {
	if err := v.UnmarshalJSON(body); err != nil {
		return errorf(http.StatusBadRequest, "InvalidRequestContent", "The request content was invalid and could not be deserialized: %v", err)
	}
	back, err := json.Marshal(v)
	if err != nil {
		return errorf(http.StatusBadRequest, "InvalidRequestContent", "%v", err)
	}
	var in, out map[string]any
	_ = json.Unmarshal(body, &in)
	_ = json.Unmarshal(back, &out)
	if k := unknownKey(in, out, ""); k != "" {
		return errorf(http.StatusBadRequest, "InvalidRequestContent", "Could not find member '%s' on the model of API version %s.", k, APIVersion)
	}
	return nil
}

// unknownKey is the first key of in (nested objects too) out lacks.
func unknownKey(in, out map[string]any, prefix string) string {
	for k, v := range in {
		o, ok := out[k]
		if !ok {
			return prefix + k
		}
		vm, isMap := v.(map[string]any)
		om, _ := o.(map[string]any)
		if isMap {
			if k := unknownKey(vm, om, prefix+k+"."); k != "" {
				return k
			}
		}
	}
	return ""
}

// compareVersions compares Kubernetes versions "1.31" or "1.31.2".
func compareVersions(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(pa), len(pb)); i++ {
		x, y := 0, 0
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		if x != y {
			return x - y
		}
	}
	return 0
}
