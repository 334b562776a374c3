package aks

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/internal/azarm"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/transport"
)

// The pool's provisioning states AKS reports while an operation runs on
// it; Succeeded, Failed and Canceled end one
// (https://learn.microsoft.com/en-us/azure/aks/manage-abort-operations).
// The others AKS reports are in states.go.
var runningStates = map[string]bool{"Upgrading": true, "UpgradingNodeImageVersion": true, "Updating": true, "Canceling": true, "Creating": true, "Scaling": true}

// endedUnfinished are the provisioning states of a pool whose last
// operation did not finish: AKS finishes it on the next write
// (https://learn.microsoft.com/en-us/azure/aks/manage-abort-operations;
// Azure/AKS#3384: a PUT with no change recovers a Failed pool).
var endedUnfinished = map[string]bool{"Failed": true, "Canceled": true}

// cancelledStates are those of a pool whose operation an abort stopped.
var cancelledStates = map[string]bool{"Canceling": true, "Canceled": true}

// poolUpdateID is the ID of an upgrade found on the pool rather than
// heard from its start (a lost answer, a killed run): Progress then reads
// the pool's provisioning state.
const poolUpdateID = "pool-state"

// Settings implements cloud.ManagedUpdater.
func (a *AgentPool) Settings(ctx context.Context) (plan.UpdateSettings, error) {
	if err := a.refresh(ctx); err != nil {
		return plan.UpdateSettings{}, err
	}
	return a.settings(), nil
}

// maxSettingsWrites bounds the PUTs Configure sends: a pool whose
// settings do not come out as sent (AKS keeping or changing a field) is
// an error to read, never a loop of writes.
const maxSettingsWrites = 3

// Configure implements cloud.ManagedUpdater: a PUT of the pool as it is
// with the upgradeSettings of s, once the pool has none of its own
// operations running (AKS answers 409 OperationNotAllowed meanwhile), then
// the wait for the update to end. A field s leaves unset that the pool
// has is sent as AKS's default, since AKS keeps a field a PUT leaves out;
// the pool is compared with s as AKS applies them (unset is the default).
// It writes nothing to a pool whose last operation ended Failed or
// Canceled: AKS takes any write to it as the order to finish that
// operation (its recovery of a failed upgrade, "a PUT with no changes"),
// so abort putting the settings back after cancel would start again the
// upgrade the user stopped.
func (a *AgentPool) Configure(ctx context.Context, s plan.UpdateSettings) error {
	for writes := 0; ; {
		if err := a.settle(ctx); err != nil {
			return err
		}
		have := a.settings()
		if effective(have).Equal(effective(s)) {
			return nil
		}
		if st := str(a.pool.Properties.ProvisioningState); endedUnfinished[st] {
			return &Error{Msg: fmt.Sprintf("cannot set the upgrade settings of %s to %s: its last operation ended %s, and AKS takes any write to the pool as the order to finish it; finish the upgrade first with \"kubectl nodeupgrade resume\" (or the run's command again), or set the settings with the Azure CLI when you mean AKS to finish it",
				a, settingsText(s), st), IsInput: true}
		}
		if writes == maxSettingsWrites {
			return &Error{Msg: fmt.Sprintf("cannot set the upgrade settings of %s to %s: after %d writes AKS reports %s; set them with \"az aks nodepool update\"",
				a, settingsText(s), writes, settingsText(have))}
		}
		send := upgradeSettings(clearing(s, have))
		err := a.doc().put(ctx, a.raw, func(props map[string]any) { props["upgradeSettings"] = send })
		if changedMeanwhile(err) { // read again (settle) and compare again
			writes++
			continue
		}
		if busy(err) { // this pool's operation, or another pool's: wait
			if err := transport.Sleep(ctx, a.c.pollEvery); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return wrap(err, "set the upgrade settings of %s", a)
		}
		writes++
	}
}

// aksDefaults are the values AKS applies to an unset upgrade setting
// (AgentPoolUpgradeSettings).
var aksDefaults = map[string]string{setMaxSurge: defaultMaxSurge, setDrain: strconv.Itoa(defaultDrainMinutes), setSoak: "0",
	setMaxUnavailable: "0", setUndrainable: undrainableSchedule}

// effective are s as AKS applies them: an unset field its default.
func effective(s plan.UpdateSettings) plan.UpdateSettings {
	out := plan.UpdateSettings{Other: maps.Clone(aksDefaults)}
	maps.Copy(out.Other, s.Other)
	return out
}

// clearing is want with each field have sets and want leaves unset given
// AKS's default, which a PUT must name to replace the pool's value.
func clearing(want, have plan.UpdateSettings) plan.UpdateSettings {
	out := plan.UpdateSettings{Other: maps.Clone(want.Other)}
	if out.Other == nil {
		out.Other = map[string]string{}
	}
	for k := range have.Other {
		if _, ok := out.Other[k]; !ok {
			out.Other[k] = aksDefaults[k]
		}
	}
	return out
}

// busy reports AKS's refusal of a change while an operation runs.
func busy(err error) bool {
	c, status := code(err)
	return status == http.StatusConflict && c == "OperationNotAllowed" && !azarm.QuotaExceeded(err)
}

// settle waits until no operation runs on the pool, and leaves it read.
func (a *AgentPool) settle(ctx context.Context) error {
	for {
		if err := a.refresh(ctx); err != nil && !cloud.Transient(err) {
			return err
		} else if st := str(a.pool.Properties.ProvisioningState); err == nil && !knownState(st) {
			return unknownState(a, st)
		} else if err == nil && !busyState(st) {
			return nil
		}
		if err := transport.Sleep(ctx, a.c.pollEvery); err != nil {
			return err
		}
	}
}

// StartUpdate implements cloud.ManagedUpdater: AKS's upgrade to the
// target, or the one running on the pool. A Kubernetes version is a PUT
// of the pool with its orchestratorVersion; a node image,
// upgradeNodeImageVersion. On a Failed or Canceled pool the same request
// finishes the upgrade AKS left (its recovery: the pool again, or the
// node image upgrade again). A 409 after a lost answer is the upgrade the
// first try started.
func (a *AgentPool) StartUpdate(ctx context.Context, _ bool) (string, error) {
	if err := a.refresh(ctx); err != nil {
		return "", err
	}
	if runningStates[str(a.pool.Properties.ProvisioningState)] {
		return poolUpdateID, nil
	}
	var op string
	ctx = context.WithValue(ctx, opKey{}, &op)
	var err error
	if a.imageOnly {
		_, err = a.c.pools.BeginUpgradeNodeImageVersion(ctx, a.id.group, a.id.name, a.name, nil)
	} else {
		err = a.doc().put(ctx, a.raw, func(props map[string]any) { props["orchestratorVersion"] = a.target.Version })
	}
	if busy(err) {
		return a.startedOrHeld(ctx, err)
	}
	if changedMeanwhile(err) {
		return "", &Error{Msg: wrap(err, "start the upgrade of %s to %s", a, a.target).Error() + "; another client changed the pool since it was read: the run reads it again", Err: err, IsTransient: true}
	}
	if err != nil {
		return "", wrap(err, "start the upgrade of %s to %s", a, a.target)
	}
	if op == "" {
		return poolUpdateID, nil
	}
	return op, nil
}

// startedOrHeld reads AKS's 409 to the upgrade's start: the upgrade a
// first try started (its answer lost) when the pool runs an operation
// now; else another pool's operation holds the cluster
// (https://aka.ms/aks-pending-operation), which passes with time.
func (a *AgentPool) startedOrHeld(ctx context.Context, conflict error) (string, error) {
	if err := a.refresh(ctx); err != nil {
		return "", err
	}
	if runningStates[str(a.pool.Properties.ProvisioningState)] {
		return poolUpdateID, nil
	}
	msg := wrap(conflict, "start the upgrade of %s", a).Error() + "; run the same command again once that operation ended"
	return "", &Error{Msg: msg, Err: conflict, IsTransient: true}
}

// RunningUpdate implements cloud.UpdateFinder.
func (a *AgentPool) RunningUpdate(ctx context.Context) (string, error) {
	if err := a.refresh(ctx); err != nil {
		return "", err
	}
	if st := str(a.pool.Properties.ProvisioningState); st == "Upgrading" || st == "UpgradingNodeImageVersion" || st == "Canceling" {
		return poolUpdateID, nil
	}
	return "", nil
}

// opKey holds, in a request's context, where opCapture writes the
// status URL of the operation the answer names.
type opKey struct{}

// opCapture keeps an answer's Azure-AsyncOperation header, the URL of the
// operation's status, whole: "use the URL in the header value to poll"
// (https://learn.microsoft.com/en-us/azure/azure-resource-manager/management/async-operations),
// its api-version included, never rebuilt from the operation's ID.
type opCapture struct{}

func (opCapture) Do(req *policy.Request) (*http.Response, error) {
	resp, err := req.Next()
	if resp == nil {
		return resp, err
	}
	if h := resp.Header.Get("Azure-AsyncOperation"); h != "" {
		if p, ok := req.Raw().Context().Value(opKey{}).(*string); ok {
			*p = h
		}
	}
	return resp, err
}

// opStatus is ARM's asynchronous operation status document.
type opStatus struct {
	Status string `json:"status"`
	Error  *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// Progress implements cloud.ManagedUpdater: the operation's status (or
// the pool's provisioning state for an upgrade found on it), and the
// pool's nodes on the target.
func (a *AgentPool) Progress(ctx context.Context, id string) (cloud.UpdateProgress, error) {
	if err := a.refresh(ctx); err != nil {
		return cloud.UpdateProgress{}, err
	}
	st := str(a.pool.Properties.ProvisioningState)
	p := cloud.UpdateProgress{ID: id, Phase: st}
	p.Done, p.Total = a.nodesDone(ctx)
	var doc opStatus
	if id == poolUpdateID {
		if !knownState(st) {
			return p, unknownState(a, st)
		}
		doc.Status = map[bool]string{true: "InProgress", false: st}[busyState(st)]
	} else if err := a.getOperation(ctx, id, &doc); err != nil {
		return p, err
	}
	switch doc.Status {
	case "Succeeded":
		p.State = cloud.UpdateSucceeded
	case "Failed":
		p.State = cloud.UpdateFailed
		nodes := poolNodesOf(a)
		p.Errors = []cloud.UpdateError{nodes.withLaunch(ctx, nodes.withDrain(ctx, failure(doc)))}
	case "Canceled":
		p.State = cloud.UpdateCancelled
		if q := a.quarantined(ctx); len(q) > 0 {
			p.State, p.Errors = cloud.UpdateQuarantined, []cloud.UpdateError{quarantineError(q)}
		}
	default:
		p.State = cloud.UpdateInProgress
	}
	return p, nil
}

// drainedNode finds the node AKS names in its drain failure.
var drainedNode = regexp.MustCompile(`Drain node (\S+)`)

// failure is the operation's error, naming the node AKS names. A drain
// AKS gave up on (UpgradeFailed, "Drain node … failed when evicting pod
// …": the PodDrainFailure troubleshooting page) is a
// cloud.CodePodEviction, and new nodes Azure refused (azarm.LaunchRefused)
// a cloud.CodeNodeCreation, AKS's own code kept in the message.
func failure(doc opStatus) cloud.UpdateError {
	e := cloud.UpdateError{Code: "UpgradeFailed", Message: "the pool's upgrade failed"}
	if doc.Error != nil {
		e.Code, e.Message = doc.Error.Code, doc.Error.Message
	}
	if m := drainedNode.FindStringSubmatch(e.Message); m != nil {
		e.Nodes = []string{m[1]}
		e.Code, e.Message = cloud.CodePodEviction, e.Code+": "+e.Message
	}
	if azarm.LaunchRefused(e.Code, e.Message) {
		// AKS adds its surge nodes first: a refusal of them (the quota, a
		// size or zone without capacity, the subnet) comes before a drain.
		e.Code, e.Message = cloud.CodeNodeCreation, fmt.Sprintf("%s: %s; AKS could not add the upgrade's new nodes", e.Code, e.Message)
	}
	return e
}

// operationsAPIVersion is the API version of AKS's operation statuses,
// for the status read the permission check asks (the run's own reads go
// to the URL AKS answered).
const operationsAPIVersion = "2025-02-01"

// getOperation reads the status document at id, the operation's status
// URL as AKS's answer named it (opCapture). An id that is no URL is an
// operation ID a run of an earlier version recorded, read at the
// cluster's location.
func (a *AgentPool) getOperation(ctx context.Context, id string, doc *opStatus) error {
	u, err := a.operationURL(id)
	if err != nil {
		return err
	}
	req, err := runtime.NewRequest(ctx, http.MethodGet, u)
	if err != nil {
		return err
	}
	resp, err := a.c.pipeline.Do(req)
	if err != nil {
		return wrap(err, "get operation %s of %s", id, a)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return wrap(runtime.NewResponseError(resp), "get operation %s of %s", id, a)
	}
	if err := json.NewDecoder(resp.Body).Decode(doc); err != nil {
		return fmt.Errorf("cannot read operation %s of %s: %w", id, a, err)
	}
	return nil
}

// operationURL is where operation id's status is read: id itself, when
// it is a URL on the endpoint's host (the credential goes nowhere else).
func (a *AgentPool) operationURL(id string) (string, error) {
	if !strings.Contains(id, "://") {
		return a.id.operationsURL(a.location) + "/operations/" + url.PathEscape(id) + "?api-version=" + operationsAPIVersion, nil
	}
	u, err := url.Parse(id)
	base, berr := url.Parse(endpoint())
	if err != nil || berr != nil || !strings.EqualFold(u.Host, base.Host) {
		return "", fmt.Errorf("cannot follow the upgrade of %s: its operation status URL %q is not on %s", a, id, endpoint())
	}
	return id, nil
}

// nodesDone counts the pool's nodes on the target, of the pool's count.
func (a *AgentPool) nodesDone(ctx context.Context) (done, total int) {
	total = int(a.count())
	if a.kube == nil {
		return 0, total
	}
	list, err := a.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: AgentPoolLabel + "=" + a.name})
	if err != nil {
		return 0, total
	}
	for i := range list.Items {
		if nodeConfig(&list.Items[i]) == a.target {
			done++
		}
	}
	return min(done, total), total
}

// CancelUpdate implements cloud.UpdateCanceller: agentPools/abort, which
// stops AKS's upgrade where it is (the pool Canceling, then Canceled); AKS
// refuses with 409 when the operation ended first. A 409 on a pool
// Canceling or Canceled is the abort done: the answer to the first try
// lost, the SDK's retry found nothing left to abort.
func (a *AgentPool) CancelUpdate(ctx context.Context, id string) error {
	_, err := a.c.pools.BeginAbortLatestOperation(ctx, a.id.group, a.id.name, a.name, nil)
	if _, status := code(err); status == http.StatusConflict {
		if rerr := a.refresh(ctx); rerr == nil && cancelledStates[str(a.pool.Properties.ProvisioningState)] {
			return nil
		}
		return &Error{Msg: fmt.Sprintf("AKS refused to abort the upgrade of %s: it ended first (%s)", a, refusal(err)), Err: err, IsInput: true}
	}
	if err != nil {
		return wrap(err, "abort the upgrade of %s", a)
	}
	return nil
}

// ResumeUpdate implements cloud.UpdateResumer: the upgrade's request
// again, which AKS takes on a Canceled or Failed pool as the upgrade to
// finish.
func (a *AgentPool) ResumeUpdate(ctx context.Context, _ string) (string, error) {
	if err := a.settle(ctx); err != nil {
		return "", err
	}
	return a.StartUpdate(ctx, false)
}

// AbortAdvice implements cloud.UpdateAborter: abort never stops AKS's
// upgrade behind its back; while it runs, cancel (agentPools/abort) stops
// it and resume finishes it. "" once it ended: abort goes on and puts the
// settings back.
func (a *AgentPool) AbortAdvice(ctx context.Context, id, group string) (string, error) {
	p, err := a.Progress(ctx, id)
	if err != nil || p.Finished() {
		return "", err
	}
	return fmt.Sprintf("AKS's upgrade of %s is running (%s); abort cannot stop it behind AKS's back: \"kubectl nodeupgrade cancel %s\" aborts it (agentPools/abort), then \"kubectl nodeupgrade resume %s\" finishes it", a, p.Phase, group, group), nil
}
