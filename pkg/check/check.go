// Package check audits the workloads running on the nodes an upgrade will
// drain and reports what would block the drain or drop traffic (SPEC §4).
//
// Everything here is a pure function of an Input snapshot, so the same audit
// backs `check`, `plan` and `run` and is unit-testable without a cluster.
// It is built to stay cheap on large clusters: objects are indexed by
// namespace/owner in one pass and every label selector is converted once.
package check

import (
	"fmt"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Severity says whether a finding stops the upgrade or only risks traffic.
type Severity string

const (
	Blocker Severity = "Blocker" // the drain will fail or the workload goes down
	Warning Severity = "Warning"
)

// Check names: stable, used by --ignore-check and in JSON output.
const (
	// Blockers.
	CheckPDBZeroDisruptions = "pdb-zero-disruptions"
	CheckMultiplePDBs       = "multiple-pdbs"
	CheckToleratesAllTaints = "tolerates-all-taints"
	CheckBarePod            = "bare-pod"
	CheckSameBatch          = "same-batch"
	CheckSingleReplica      = "single-replica"
	// CheckDoNotDisrupt: where Karpenter replaces the nodes, a pod on an
	// outdated node whose karpenter.sh/do-not-disrupt is in force;
	// Karpenter's drift waits for it. Elsewhere such a pod is a
	// do-not-evict warning.
	CheckDoNotDisrupt = "do-not-disrupt"
	// Found by the planner: the target labels cannot come from the cloud
	// target; a pod fits on no node but the outdated one it runs on; the
	// pods of a batch fit on no node that stays and nothing adds one; the
	// scale-up would bring machines of the old version out of a warm pool;
	// provider none would delete the Node objects of machines a cloud group
	// may keep running (only --leave-machines-running lets it).
	CheckUnreachableTarget  = "unreachable-target"
	CheckPodCannotMove      = "pod-cannot-move"
	CheckNoRoom             = "no-room"
	CheckOutdatedWarmPool   = "outdated-warm-pool"
	CheckMachineLeftRunning = "machine-left-running"
	// CheckForcedPastPDB is found by the planner where the cloud's
	// service runs the update and deletes the pods a PDB still holds
	// once its PDB timeout passes (GKE): the pods it would force out.
	CheckForcedPastPDB = "forced-past-pdb"
	// CheckMissingPermission is found where the cloud, asked before
	// anything changes, says the caller may not make a call the run makes
	// (AWS iam:SimulatePrincipalPolicy, GCP testIamPermissions).
	CheckMissingPermission = "missing-permission"
	// CheckNodeDoNotDisrupt is found by the Karpenter provider: an
	// outdated node whose Node or NodeClaim is annotated
	// karpenter.sh/do-not-disrupt=true. Only the user lifts it, by
	// removing the annotation: neither --force nor --ignore-check does.
	CheckNodeDoNotDisrupt = "node-do-not-disrupt"
	// CheckNodeHold is found on an outdated node its owner labelled
	// nodeupgrade.dev/hold=true: the run skips it without draining and
	// leaves it quarantined.
	CheckNodeHold = "node-hold"
	// CheckGroupDegraded is found where the cloud's service reports the
	// group in a state it needs its owner to mend before it updates it
	// (EKS: a managed node group DEGRADED, with its health issues).
	CheckGroupDegraded = "group-degraded"
	// CheckInstanceProtected is found by the vmss provider: an outdated
	// node whose scale set instance is protected from scale set actions
	// (protectionPolicy.protectFromScaleSetActions), which Azure keeps
	// out of the model update and reimage the run needs.
	CheckInstanceProtected = "instance-protected"
	// CheckGateFailing is found where a --gate, evaluated when planned,
	// fails or cannot be evaluated (package gate). Only its
	// --ignore-check lifts it.
	CheckGateFailing = "gate-failing"
	// CheckInsufficientQuota and CheckInsufficientIPs are found where the
	// cloud says the nodes the run adds at its peak exceed what is free of
	// a quota (vCPUs by the instance family's bucket) or of a subnet's
	// addresses: the run would stop at its scale-up, or halfway. Only
	// their --ignore-check lifts them: they are not about pods.
	CheckInsufficientQuota = "insufficient-quota"
	CheckInsufficientIPs   = "insufficient-ips"
	// Warnings.
	// CheckCapacityUnprovable: the cloud could say whether the added
	// nodes fit its limits but did not (a quota the caller may not read,
	// an instance family without a known quota, prefix delegation).
	CheckCapacityUnprovable = "capacity-unprovable"
	// CheckPermissionsUnchecked: the cloud could not be asked (the caller
	// may not simulate its policies, say).
	CheckPermissionsUnchecked = "permissions-unchecked"
	CheckNoPDB                = "no-pdb"
	CheckZoneConcentration    = "zone-concentration"
	CheckNoReadinessProbe     = "no-readiness-probe"
	CheckPreStopExceedsGrace  = "prestop-exceeds-grace"
	CheckLBNoReadinessGate    = "lb-no-readiness-gate"
	CheckLBNoPreStop          = "lb-no-prestop"
	CheckLBMinReadySeconds    = "lb-min-ready-seconds"
	CheckEmptyDirData         = "emptydir-data"
	CheckDoNotEvict           = "do-not-evict"
)

// severities maps each check to its severity; its key order is given by names.
var severities = map[string]Severity{
	CheckPDBZeroDisruptions:   Blocker,
	CheckMultiplePDBs:         Blocker,
	CheckToleratesAllTaints:   Blocker,
	CheckBarePod:              Blocker,
	CheckSameBatch:            Blocker,
	CheckSingleReplica:        Blocker,
	CheckDoNotDisrupt:         Blocker,
	CheckUnreachableTarget:    Blocker,
	CheckPodCannotMove:        Blocker,
	CheckNoRoom:               Blocker,
	CheckOutdatedWarmPool:     Blocker,
	CheckMachineLeftRunning:   Blocker,
	CheckForcedPastPDB:        Blocker,
	CheckMissingPermission:    Blocker,
	CheckNodeDoNotDisrupt:     Blocker,
	CheckGroupDegraded:        Blocker,
	CheckGateFailing:          Blocker,
	CheckInsufficientQuota:    Blocker,
	CheckInsufficientIPs:      Blocker,
	CheckInstanceProtected:    Blocker,
	CheckCapacityUnprovable:   Warning,
	CheckPermissionsUnchecked: Warning,
	CheckNoPDB:                Warning,
	CheckZoneConcentration:    Warning,
	CheckNoReadinessProbe:     Warning,
	CheckPreStopExceedsGrace:  Warning,
	CheckLBNoReadinessGate:    Warning,
	CheckLBNoPreStop:          Warning,
	CheckLBMinReadySeconds:    Warning,
	CheckEmptyDirData:         Warning,
	CheckDoNotEvict:           Warning,
	CheckNodeHold:             Warning,
}

var names = []string{
	CheckPDBZeroDisruptions, CheckMultiplePDBs, CheckToleratesAllTaints,
	CheckBarePod, CheckSameBatch, CheckSingleReplica, CheckDoNotDisrupt,
	CheckUnreachableTarget, CheckPodCannotMove, CheckNoRoom, CheckOutdatedWarmPool,
	CheckMachineLeftRunning, CheckForcedPastPDB, CheckMissingPermission, CheckNodeDoNotDisrupt, CheckGroupDegraded, CheckGateFailing,
	CheckInsufficientQuota, CheckInsufficientIPs, CheckInstanceProtected,
	CheckNoPDB, CheckZoneConcentration, CheckNoReadinessProbe,
	CheckPreStopExceedsGrace, CheckLBNoReadinessGate, CheckLBNoPreStop,
	CheckLBMinReadySeconds, CheckEmptyDirData, CheckDoNotEvict,
	CheckPermissionsUnchecked, CheckCapacityUnprovable, CheckNodeHold,
}

// ByPlanner are the checks the planner makes (it knows the cloud target
// and every node); Run never reports them.
var ByPlanner = []string{CheckUnreachableTarget, CheckPodCannotMove, CheckNoRoom, CheckOutdatedWarmPool, CheckMachineLeftRunning, CheckForcedPastPDB, CheckMissingPermission, CheckNodeDoNotDisrupt, CheckGroupDegraded, CheckGateFailing, CheckPermissionsUnchecked,
	CheckInsufficientQuota, CheckInsufficientIPs, CheckCapacityUnprovable, CheckInstanceProtected}

// IgnoredOnly are the blockers --force does not lift, only their own
// --ignore-check: they are about the cloud or the caller, not pods.
var IgnoredOnly = []string{CheckMissingPermission, CheckGroupDegraded, CheckGateFailing, CheckInsufficientQuota, CheckInsufficientIPs}

// Names lists every check name, blockers first, for --ignore-check
// validation and help. The slice is a copy the caller may modify.
func Names() []string {
	return append([]string(nil), names...)
}

// SeverityOf returns the severity of a check name, and false for an unknown name.
func SeverityOf(check string) (Severity, bool) {
	s, ok := severities[check]
	return s, ok
}

// Finding is one problem of one workload.
type Finding struct {
	Check     string   `json:"check"` // stable name, used by --ignore-check (constants above)
	Severity  Severity `json:"severity"`
	Kind      string   `json:"kind"` // Deployment, StatefulSet, ReplicaSet, Job, Pod (bare), or another controller's kind
	Namespace string   `json:"namespace"`
	Name      string   `json:"name"`
	Nodes     []string `json:"nodes,omitempty"` // outdated nodes running the workload's pods
	Message   string   `json:"message"`         // one line, what is wrong, with figures
	Fix       string   `json:"fix"`             // one line fix
}

// Object names what the finding is about: kind/namespace/name, or
// kind/name for what has no namespace.
func (f Finding) Object() string {
	if f.Namespace == "" {
		return f.Kind + "/" + f.Name
	}
	return f.Kind + "/" + f.Namespace + "/" + f.Name
}

// Input is the snapshot the audit works on. Slices are read, never modified.
type Input struct {
	Nodes        []corev1.Node // the group's nodes (their zones bound zone-concentration)
	Pods         []corev1.Pod
	PDBs         []policyv1.PodDisruptionBudget
	ReplicaSets  []appsv1.ReplicaSet // to map pods to Deployments
	Deployments  []appsv1.Deployment
	StatefulSets []appsv1.StatefulSet
	Services     []corev1.Service
	Namespaces   []corev1.Namespace
	Outdated     []string   // names of the nodes that will be drained
	Batches      [][]string // node names per batch, in order (for the same-batch check)
	Namespace    string     // "" = all namespaces; otherwise only workloads of that namespace
	// Recovering are the controllers an interrupted run evicted pods of
	// and that may not be Ready again yet. The run that goes on evicts
	// their pods only once they are, so a budget that allows no
	// disruption now because of them blocks nothing.
	Recovering []Controller
	// DoNotDisrupt says Karpenter replaces the nodes: a pod whose
	// karpenter.sh/do-not-disrupt is in force is a do-not-disrupt
	// blocker, as Karpenter's drift waits for it; otherwise it is a
	// do-not-evict warning. Now is when its duration is read at (zero:
	// the time of Run).
	DoNotDisrupt bool
	Now          time.Time
}

// Controller is a pod's controller (ReplicaSet, StatefulSet,
// ReplicationController) by kind, namespace and name.
type Controller struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

func (c Controller) String() string { return fmt.Sprintf("%s %q", c.Kind, c.Namespace+"/"+c.Name) }

// Well-known keys read by the checks.
const (
	labelZone           = "topology.kubernetes.io/zone"
	labelZoneDeprecated = "failure-domain.beta.kubernetes.io/zone"
	labelGateInject     = "elbv2.k8s.aws/pod-readiness-gate-inject"
	gatePrefix          = "target-health."
	annSafeToEvict      = "cluster-autoscaler.kubernetes.io/safe-to-evict"
)

// WorkloadOf returns the workload (kind, namespace, name) owning a pod:
// Deployment via its ReplicaSet, StatefulSet, ReplicaSet without Deployment,
// Job, DaemonSet, or Pod when bare. A pod controlled by anything else (a
// ReplicationController, an operator's custom resource, a mirror pod's Node)
// is reported under its controller's kind and name. rsOwner (see
// DeploymentOwnersOf) may be nil.
func WorkloadOf(pod *corev1.Pod, rsOwner DeploymentOwners) (kind, namespace, name string) {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		// Owner references without controller=true recreate nothing: as kubectl drain, treat as bare.
		return "Pod", pod.Namespace, pod.Name
	}
	if ref.Kind == "ReplicaSet" {
		if d, ok := rsOwner[nsName{pod.Namespace, ref.Name}]; ok {
			return "Deployment", pod.Namespace, d
		}
	}
	return ref.Kind, pod.Namespace, ref.Name
}

// DeploymentOwners maps a ReplicaSet, by namespace and name, to the name of
// the Deployment that controls it. The key is a pair, not "ns/name": a
// lookup of a joined key built a string for every pod.
type DeploymentOwners map[nsName]string

// DeploymentOwnersOf maps the ReplicaSets of rss that a Deployment controls
// and whose namespace keep accepts (nil accepts all) to that Deployment.
func DeploymentOwnersOf(rss []appsv1.ReplicaSet, keep func(namespace string) bool) DeploymentOwners {
	owners := make(DeploymentOwners, len(rss))
	for i := range rss {
		rs := &rss[i]
		if keep != nil && !keep(rs.Namespace) {
			continue
		}
		if ref := metav1.GetControllerOfNoCopy(rs); ref != nil && ref.Kind == "Deployment" {
			owners[nsName{rs.Namespace, rs.Name}] = ref.Name
		}
	}
	return owners
}

// Run returns the findings for every workload with pods on Outdated nodes,
// sorted by severity (blockers first), namespace, kind, name, check.
// Each (workload, check) is reported once with the outdated nodes involved.
func Run(in Input) []Finding {
	a := newAudit(&in)
	var out []Finding
	for _, w := range a.workloads {
		if len(w.outdated) == 0 {
			continue
		}
		out = append(out, a.auditWorkload(w)...)
	}
	if in.DoNotDisrupt {
		out = append(out, a.doNotDisrupt()...)
	}
	out = append(out, heldNodes(in)...)
	sortFindings(out)
	return out
}

// Sort orders findings as Run does, after a caller changed severities, and
// returns them.
func Sort(fs []Finding) []Finding {
	sortFindings(fs)
	return fs
}

func sortFindings(fs []Finding) {
	sort.Slice(fs, func(i, j int) bool {
		a, b := &fs[i], &fs[j]
		if a.Severity != b.Severity {
			return a.Severity == Blocker
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Check < b.Check
	})
}
