// Package state keeps, in the cluster, the record of a run (phase, progress,
// last error) and the lock that keeps two runs off the same node group:
// a ConfigMap for the record and a coordination.k8s.io Lease for the lock,
// one of each per node group.
package state

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

const (
	// ManagedByLabel marks the objects of this package, so status can list them.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	managedBy      = "kubectl-nodeupgrade"
	// GroupAnnotation holds the node group (or selector) an object is for.
	GroupAnnotation = "nodeupgrade.dev/nodegroup"
	recordKey       = "record.json"
	// DefaultNamespace holds records and locks unless --state-namespace says otherwise.
	DefaultNamespace = "kube-system"
)

// Record is what status shows and a re-run continues from.
type Record struct {
	NodeGroup string            `json:"nodeGroup"` // the group name, or "-l <selector>"
	Strategy  string            `json:"strategy"`
	Target    map[string]string `json:"target"`
	// State is where the run stands, as its last writer left it (empty
	// in records of versions before it: see session.Describe).
	State RunState `json:"state,omitempty"`
	// Submission is set while the run is handed to an in-cluster Job
	// whose pod has not taken it (State submitted).
	Submission *Submission `json:"submission,omitempty"`
	Phase      string      `json:"phase"`
	Batch      int         `json:"batch"` // 1-based batch in progress
	Batches    int         `json:"batches"`
	NodesTotal int         `json:"nodesTotal"`
	Done       []string    `json:"done"`
	InFlight   []string    `json:"inFlight"`
	LastError  string      `json:"lastError,omitempty"`
	Holder     string      `json:"holder,omitempty"`
	StartedAt  time.Time   `json:"startedAt"`
	UpdatedAt  time.Time   `json:"updatedAt"`
	FinishedAt *time.Time  `json:"finishedAt,omitempty"`
	// Attempts are the run's attempts in order (attempts.go).
	Attempts []Attempt `json:"attempts,omitempty"`
	// LeftRunning are the outdated nodes the short-lived strategy leaves
	// to go away on their own, and MaxAge how old they may get.
	LeftRunning []NodeAge     `json:"leftRunning,omitempty"`
	MaxAge      time.Duration `json:"maxAge,omitempty"`
	// Request is what the run was asked to do, so resume and rollback can
	// repeat it; nil in records of versions that kept command-line text.
	Request *plan.Request `json:"request,omitempty"`
	// Note is what a finished run wants the operator to know (e.g. the
	// cluster autoscaler stopped the scale-down).
	Note string `json:"note,omitempty"`
	// Fleet is the fleet ("NAME@HASH": its name and plan's hash) whose
	// coordinator started or went on with the run; "" for a run of its own.
	Fleet string `json:"fleet,omitempty"`
	// Quarantined are the nodes --undrainable cordon left cordoned and
	// tainted, their machines kept: their drains were still held at
	// --drain-timeout. The next run replaces them first.
	Quarantined []Quarantined `json:"quarantined,omitempty"`
	// Cloud is what a run on a cloud group must not forget; nil with
	// provider none.
	Cloud *CloudRecord `json:"cloud,omitempty"`
	// Managed is what a run of an update the cloud's service carries out
	// must not forget; nil for every other run.
	Managed *ManagedRecord `json:"managed,omitempty"`
	// HooksDone are the hooks that succeeded, by node, each written once it
	// succeeded: a re-run repeats only the others.
	HooksDone map[string][]string `json:"hooksDone,omitempty"`
	// AbortedAt is when "abort" put the group back in service; the run is
	// over then (FinishedAt is set too) but did not reach its target.
	AbortedAt *time.Time `json:"abortedAt,omitempty"`
	// RollbackFrom is, once the run is rolled back in place, how many of
	// Done the upgrade had replaced; the rest are the rollback's.
	RollbackFrom *int `json:"rollbackFrom,omitempty"`
	// Recovering are the workloads the run evicted pods of that may not be
	// Ready again yet: a run that goes on after an interruption evicts
	// their pods only once they are.
	Recovering []Workload `json:"recovering,omitempty"`
	// WaitingForWindow is, while the run waits for a maintenance window
	// to open (--window, --not-before), when it opens.
	WaitingForWindow *time.Time `json:"waitingForWindow,omitempty"`
	// MakeRoom are the workloads --make-room surged, each recorded with
	// its values before the change is made (makeroom.go).
	MakeRoom []Surge `json:"makeRoom,omitempty"`
	// Gates are the soaks and gate evaluations between the run's waves
	// (gates.go), the last pending while the run soaks.
	Gates []WaveGate `json:"gates,omitempty"`
	// History are the group's finished runs, oldest first (history.go):
	// what it ran before and after each, carried from record to record.
	History []Change `json:"history,omitempty"`
	// From is what the group launched when the run set out, written at
	// its first attempt: History's Before once it finishes.
	From *Version `json:"from,omitempty"`
	// Asked is the last control an operator's command asked of the run,
	// recorded before the command acted (asked.go).
	Asked *ControlAsk `json:"asked,omitempty"`
}

// Workload is a replica controller (ReplicaSet, StatefulSet,
// ReplicationController) by kind, namespace and name: the audit's type,
// so a plan is told what the record says is recovering.
type Workload = check.Controller

// Offers reports whether the service's update takes cmd: run, resume
// (the recorded run again) and abort are the plugin's, any other a
// control the service must offer.
func (m *ManagedRecord) Offers(cmd string) bool {
	switch cmd {
	case "run", "resume", "abort":
		return true
	}
	return m.Controls == nil || slices.Contains(m.Controls, cmd)
}

// ManagedRecord is a run's side of an update the cloud's service runs
// (EKS managed node groups, GKE node pools): written before each call
// that changes the group, so a re-run follows the same update and puts
// the same settings back.
type ManagedRecord struct {
	// Group names the service's group; Service and Target say, in the
	// service's words, what the group is and what the update moves it to,
	// for status (a GKE node pool's nodes carry no label that says it).
	Group   string `json:"group"`
	Service string `json:"service,omitempty"`
	Target  string `json:"target,omitempty"`
	// Controls are the service's controls of its update the run offers
	// ("cancel", "resume", "rollback", "complete"): status suggests no
	// other. nil in a record written before they were recorded: any.
	Controls []string `json:"controls,omitempty"`
	// Before are the group's update settings before the run, put back at
	// the end; Configured says the run's own were set.
	Before     plan.UpdateSettings `json:"before"`
	Configured bool                `json:"configured,omitempty"`
	// UpdateID is the service's update the run started (or found).
	UpdateID string `json:"updateID,omitempty"`
	// Nodes are the nodes the update replaces (the plan's outdated ones
	// when the run set out) and Sizes the group's before the service
	// scaled it up: a re-run during the update counts these, not the
	// service's surge or green nodes, nor its raised sizes.
	Nodes []string    `json:"nodes,omitempty"`
	Sizes *plan.Sizes `json:"sizes,omitempty"`
	// WindowPaused is the update the run cancelled because the
	// maintenance window closed (an operator's cancel leaves it empty):
	// the run resumes it once a window opens. CompleteSoak says it was
	// paused in a blue/green soak that had run its length, so the run
	// ends the soak on resuming.
	WindowPaused string `json:"windowPaused,omitempty"`
	CompleteSoak bool   `json:"completeSoak,omitempty"`
	// RollingBackFrom is the update whose rollback the run asks the
	// service for, recorded before it asks: killed before the service's
	// answer (the rollback's ID) was recorded, the next command finds the
	// rollback running.
	RollingBackFrom string `json:"rollingBackFrom,omitempty"`
	// SizesBefore are the group's sizes before the run (before its first
	// update, where Sizes are before the latest), where the run can bring
	// them back (cloud.Shrinker): an update that fails leaves the
	// service's scale-up, which abort, or the end of the run that starts
	// another update, takes back one drained node at a time, recorded in
	// ScaleDown.
	SizesBefore *plan.Sizes  `json:"sizesBefore,omitempty"`
	ScaleDown   *ScaleRecord `json:"scaleDown,omitempty"`
	// FailedUpdate is an update of the run that failed and that a re-run
	// followed no more, starting another: its scale-up stays (the next
	// update scales down only its own), so the run's end takes it back.
	FailedUpdate string `json:"failedUpdate,omitempty"`
	// Held are the pods a PDB holds on the nodes the service drains, as
	// the run following the update saw them last: status -w names them
	// from another terminal while the service drains.
	Held []HeldPod `json:"held,omitempty"`
	// WriteFinishes is the plan's (plan.ManagedPlan): a write to the
	// group after its update stopped is the order to finish it.
	WriteFinishes bool `json:"writeFinishes,omitempty"`
	// DrainFailure is, once the service's update failed on a drain it gave
	// up on, the node, the pod and PDB it named and what it did (AKS:
	// the node schedulable again, its surge nodes deleted); nil otherwise.
	DrainFailure *plan.ServiceDrainFailure `json:"drainFailure,omitempty"`
}

// SettingsStuck reports whether the run's own update settings stay on a
// group whose update stopped (cancel, a failure) until a run finishes it:
// the service takes abort's write of the settings before as the order to
// finish the update, so abort refuses and names resume (AKS).
func (m *ManagedRecord) SettingsStuck() bool {
	return m != nil && m.WriteFinishes && m.Configured && m.UpdateID != ""
}

// HeldPod is a pod whose eviction a PDB refuses on a node being drained,
// since the run first saw it held. Pod and PDB are namespace/name.
type HeldPod struct {
	Node  string    `json:"node"`
	Pod   string    `json:"pod"`
	PDB   string    `json:"pdb"`
	Since time.Time `json:"since"`
}

// CloudRecord is the cloud side of a run, written before each change it
// describes, so an interrupted run is finished without inflating the group
// twice and ends at the sizes it started from. Its parts are typed by
// their writer: the provider's (GroupRecord: which group and how it was
// before the run; Holds: what the run holds off and must give back) and
// the strategy's (ScaleRecord for eks and surge, GreenRecord for
// blue/green). They are embedded so the JSON stays one flat object: a
// record written by an earlier version reads the same, and an earlier
// version reads this one's (a run resumed across an upgrade or a
// downgrade of the plugin).
type CloudRecord struct {
	GroupRecord
	Holds
	ScaleRecord
	GreenRecord
}

// GroupRecord is the provider's part: the group the run changes, in the
// provider's words, and how it was before the run. Written once, when the
// run first changes the group.
type GroupRecord struct {
	Provider string `json:"provider"`
	// Group is the provider's group; GroupKind and TemplateKind are the
	// provider's names for a group and a template ("Auto Scaling group",
	// "launch template"), what a record older than them meant.
	Group        string `json:"group"`
	GroupKind    string `json:"groupKind,omitempty"`
	TemplateKind string `json:"templateKind,omitempty"`
	// Template is the plan's template (Karpenter: the NodePool's
	// NodeClass), for status where the run sets no TargetVersion.
	Template      string `json:"template,omitempty"`
	TargetVersion string `json:"targetVersion,omitempty"`
	// FromVersion is the version the group launched before the run: what
	// a rollback of an eks or surge run goes back to.
	FromVersion string `json:"fromVersion,omitempty"`
	// Original are the sizes before the scale-up: what the end restores.
	Original *plan.Sizes `json:"original,omitempty"`
}

// Holds are the group's own behaviours the run holds off, each written
// before the call that changes it, so whatever ends the run (its end,
// resume, abort) gives it back.
type Holds struct {
	// RebalanceHeld says the run suspends the group's own rebalancing
	// between zones (cloud.Rebalancer). RebalanceWasHeld says it was
	// suspended before the run: left so.
	RebalanceHeld    bool `json:"rebalanceHeld,omitempty"`
	RebalanceWasHeld bool `json:"rebalanceWasHeld,omitempty"`
	// DefaultWas is the template's default version before the run made
	// the target the default (a group that launches the default,
	// cloud.DefaultFollower): abort and rollback make it the default
	// again.
	DefaultWas string `json:"defaultWas,omitempty"`
	// UpdatesWere is how the group updated itself before the run held it
	// off (cloud.SelfUpdater): the run's end and abort put it back.
	UpdatesWere string `json:"updatesWere,omitempty"`
}

// ScaleRecord is the eks and surge strategies' part: the scale-up and
// the scale-down of the group.
type ScaleRecord struct {
	ScaleUp int32 `json:"scaleUp,omitempty"`
	// ScaleUpZones are the zones the scale-up surely launches in, where
	// the run waits for a new node, written before the raise: once the
	// group is raised the new machines no longer say which zones that
	// were.
	ScaleUpZones []string `json:"scaleUpZones,omitempty"`
	// ScaledFor is the target version the scale-up was for; a rollback
	// finds the group already scaled up for another one.
	ScaledFor string `json:"scaledFor,omitempty"`
	// LastDesired is the desired size the run last set; a larger one means
	// someone else (the cluster autoscaler) scaled the group up.
	LastDesired int32 `json:"lastDesired,omitempty"`
	// Shrinking is the node the scale-down is removing; ShrinkTo, once it
	// is drained, the desired size its termination leaves.
	Shrinking string `json:"shrinking,omitempty"`
	ShrinkTo  int32  `json:"shrinkTo,omitempty"`
	// LaunchFailure is the cloud's refusal of the new machines' launches
	// that stopped the run before any drain; a wait that no longer meets
	// one clears it.
	LaunchFailure *plan.LaunchFailure `json:"launchFailure,omitempty"`
	// Reservations are the capacity the run reserved for its scale-ups
	// (--reserve-surge), each recorded before it is asked for and marked
	// released once cancelled.
	Reservations []plan.Reservation `json:"reservations,omitempty"`
}

// GreenRecord is the blue/green strategies' part.
type GreenRecord struct {
	// Green is the new group; GreenCreated says the run made it (and a
	// rollback deletes it).
	Green        string `json:"green,omitempty"`
	GreenCreated bool   `json:"greenCreated,omitempty"`
	// SoakUntil is when the soak of the new nodes ends.
	SoakUntil *time.Time `json:"soakUntil,omitempty"`
	// BlueNodes are the nodes blue's deletion takes, recorded before it
	// starts: a run killed after the group is gone, before it counted
	// them done, leaves the re-run their names.
	BlueNodes []string `json:"blueNodes,omitempty"`
	// BlueKeptUntil is set when the run kept blue at 0 nodes instead of
	// deleting it (--keep-blue): until when a rollback can scale it up.
	BlueKeptUntil *time.Time `json:"blueKeptUntil,omitempty"`
}

// NodeAge is a node and when it was created.
type NodeAge struct {
	Name    string    `json:"name"`
	Created time.Time `json:"created"`
}

// HookDone says whether hook succeeded for node in this run.
func (r *Record) HookDone(node, hook string) bool {
	return slices.Contains(r.HooksDone[node], hook)
}

// MarkHookDone records that hook succeeded for node.
func (r *Record) MarkHookDone(node, hook string) {
	if r.HookDone(node, hook) {
		return
	}
	if r.HooksDone == nil {
		r.HooksDone = map[string][]string{}
	}
	r.HooksDone[node] = append(r.HooksDone[node], hook)
}

// Left is the number of nodes not done yet.
func (r *Record) Left() int { return max(r.NodesTotal-len(r.Counted()), 0) }

// Counted are the nodes of Done that NodesTotal counts: after a rollback
// in place, the rollback's own (Done also holds those the upgrade had
// replaced, which the rollback replaced again).
func (r *Record) Counted() []string {
	if r.RollbackFrom == nil {
		return r.Done
	}
	return r.Done[min(*r.RollbackFrom, len(r.Done)):]
}

// ObjectName is the name of the ConfigMap and Lease of a node group: the
// group name where it is a valid object name, a hash otherwise (selectors).
func ObjectName(group string) string {
	name := "nodeupgrade-" + group
	if len(validation.IsDNS1123Subdomain(name)) == 0 && len(name) <= 63 {
		return name
	}
	sum := sha256.Sum256([]byte(group))
	return "nodeupgrade-" + hex.EncodeToString(sum[:8])
}

// Store reads and writes records in one namespace. Use it through a
// pointer: it remembers the ConfigMaps it read and wrote.
type Store struct {
	Client    kubernetes.Interface
	Namespace string

	// last are the record ConfigMaps as this Store last read or wrote them,
	// by name. Save updates from there: the update carries the
	// resourceVersion, so the API server refuses it with a conflict when
	// someone else changed the ConfigMap since, and Save reads it again.
	mu   sync.Mutex
	last map[string]*corev1.ConfigMap
}

// remembered returns the ConfigMap name as this Store last saw it, or nil.
func (s *Store) remembered(name string) *corev1.ConfigMap {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last[name]
}

// remember notes the ConfigMap name as the API server returned it.
func (s *Store) remember(name string, cm *corev1.ConfigMap) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last == nil {
		s.last = map[string]*corev1.ConfigMap{}
	}
	s.last[name] = cm
}

// forget drops what the Store saw of the ConfigMap name: gone.
func (s *Store) forget(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.last, name)
}

// Delete removes the record of group (and the requests on it); none
// there is no error.
func (s *Store) Delete(ctx context.Context, group string) error {
	name := ObjectName(group)
	err := s.Client.CoreV1().ConfigMaps(s.Namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("error when deleting the record of %q: %w", group, err)
	}
	s.forget(name)
	return nil
}

// Load returns the record of group, or nil when there is none.
func (s *Store) Load(ctx context.Context, group string) (*Record, error) {
	name := ObjectName(group)
	cm, err := s.Client.CoreV1().ConfigMaps(s.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		s.forget(name)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("error when reading the record of %q: %w", group, err)
	}
	s.remember(name, cm)
	return decode(cm)
}

// List returns every record in the namespace, by node group.
func (s *Store) List(ctx context.Context) ([]*Record, error) {
	list, err := s.Client.CoreV1().ConfigMaps(s.Namespace).List(ctx, metav1.ListOptions{LabelSelector: ManagedByLabel + "=" + managedBy})
	if err != nil {
		return nil, fmt.Errorf("error when listing records in namespace %q: %w", s.Namespace, err)
	}
	var out []*Record
	for i := range list.Items {
		// Other objects of the plugin's carry the label too (an in-cluster
		// run's saved plan): only a record holds the record's key.
		if _, ok := list.Items[i].Data[recordKey]; !ok {
			continue
		}
		r, err := decode(&list.Items[i])
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].NodeGroup < out[j].NodeGroup })
	return out, nil
}

func decode(cm *corev1.ConfigMap) (*Record, error) {
	var r Record
	if err := json.Unmarshal([]byte(cm.Data[recordKey]), &r); err != nil {
		return nil, fmt.Errorf("cannot read the record in configmap %q: %w", cm.Namespace+"/"+cm.Name, err)
	}
	return &r, nil
}

// Save writes the record, creating it the first time.
func (s *Store) Save(ctx context.Context, r *Record) error {
	r.UpdatedAt = time.Now().UTC().Truncate(time.Second)
	name := ObjectName(r.NodeGroup)
	cms := s.Client.CoreV1().ConfigMaps(s.Namespace)
	// The ConfigMap is updated from where this Store last saw it, and
	// created when it saw none. A conflict (someone else changed it: a
	// request annotated from another terminal) or a create that finds it
	// there reads it, then updates it. Only Data is replaced: the metadata,
	// annotations included, stays as read.
	read := false
	return retry.OnError(retry.DefaultRetry, func(err error) bool {
		return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)
	}, func() error {
		cm := s.remembered(name)
		if read {
			got, err := cms.Get(ctx, name, metav1.GetOptions{})
			switch {
			case err == nil:
				cm = got
				s.remember(name, got)
			case apierrors.IsNotFound(err):
				cm = nil
				s.forget(name)
			default:
				return err
			}
		}
		keepAsked(r, cm)
		data, err := json.Marshal(r)
		if err != nil {
			return err
		}
		if cm != nil {
			err := s.updateData(ctx, cm, data)
			if err == nil {
				return nil
			}
			if !apierrors.IsNotFound(err) {
				read = apierrors.IsConflict(err)
				return err
			}
			// Deleted since (abort, or someone): create it again.
		}
		cm = &corev1.ConfigMap{ObjectMeta: s.meta(name, r.NodeGroup), Data: map[string]string{recordKey: string(data)}}
		created, err := cms.Create(ctx, cm, metav1.CreateOptions{})
		if err != nil {
			read = apierrors.IsAlreadyExists(err)
			return err
		}
		s.remember(name, created)
		return nil
	})
}

// updateData writes data as the record of cm, a ConfigMap as read, its
// metadata kept; the API server refuses it with a conflict when cm was
// changed since.
func (s *Store) updateData(ctx context.Context, cm *corev1.ConfigMap, data []byte) error {
	cm = cm.DeepCopy()
	cm.Data = map[string]string{recordKey: string(data)}
	updated, err := s.Client.CoreV1().ConfigMaps(s.Namespace).Update(ctx, cm, metav1.UpdateOptions{})
	if err == nil {
		s.remember(cm.Name, updated)
	}
	return err
}

func (s *Store) meta(name, group string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:        name,
		Namespace:   s.Namespace,
		Labels:      map[string]string{ManagedByLabel: managedBy},
		Annotations: map[string]string{GroupAnnotation: group},
	}
}

// HeldError says another live run holds the lock of a node group.
type HeldError struct {
	Group, Holder string
	RenewedAt     time.Time
	Expires       time.Time
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("node group %q is being upgraded by %q (lock renewed %s ago, expires in %s); wait for it, or run again after it stops",
		e.Group, e.Holder, time.Since(e.RenewedAt).Round(time.Second), time.Until(e.Expires).Round(time.Second))
}

// Lock is a Lease held by one run at a time. A holder that stops renewing
// (killed, lost its network) loses it after Duration, and the next run takes
// over.
type Lock struct {
	Client    kubernetes.Interface
	Namespace string
	Group     string
	Holder    string
	Duration  time.Duration
}

// HolderIdentity names this process for the lock and status.
func HolderIdentity() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d", host, os.Getpid())
}

// deadOnThisHost reports whether holder names a process of this machine that
// no longer runs (a killed run): its lock need not be waited out.
func deadOnThisHost(holder string) bool {
	host, pidText, ok := strings.Cut(holder, "/")
	me, _ := os.Hostname()
	pid, err := strconv.Atoi(pidText)
	if !ok || err != nil || host != me || runtime.GOOS == "windows" {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return true
	}
	err = p.Signal(syscall.Signal(0))
	return err != nil && !errors.Is(err, os.ErrPermission) || exited(pid)
}

// exited reports whether the process has exited though its parent has not
// reaped it yet (a zombie, which signal 0 still reaches), where /proc says.
func exited(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X')
}

// Elsewhere reports whether the holder runs on another machine, whose
// processes this one cannot see: a killed run there holds the lock until
// it expires.
func (e *HeldError) Elsewhere() bool {
	host, _, _ := strings.Cut(e.Holder, "/")
	me, _ := os.Hostname()
	return host != me
}

// Acquire takes the lock, or returns a *HeldError when a live run holds it.
func (l *Lock) Acquire(ctx context.Context) error {
	leases := l.Client.CoordinationV1().Leases(l.Namespace)
	name := ObjectName(l.Group)
	now := metav1.NewMicroTime(time.Now())
	seconds := int32(l.Duration / time.Second)
	lease, err := leases.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		store := Store{Namespace: l.Namespace}
		lease = &coordinationv1.Lease{ObjectMeta: store.meta(name, l.Group), Spec: coordinationv1.LeaseSpec{
			HolderIdentity: &l.Holder, LeaseDurationSeconds: &seconds, AcquireTime: &now, RenewTime: &now,
		}}
		_, err = leases.Create(ctx, lease, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return l.Acquire(ctx) // someone was faster: look again
		}
		return err
	}
	if err != nil {
		return fmt.Errorf("error when reading the lock of %q: %w", l.Group, err)
	}
	if held := l.heldByOther(lease); held != nil {
		return held
	}
	lease.Spec.HolderIdentity, lease.Spec.LeaseDurationSeconds = &l.Holder, &seconds
	lease.Spec.AcquireTime, lease.Spec.RenewTime = &now, &now
	// The update carries the resourceVersion we read: if two runs take over
	// an expired lock at once, one gets a conflict and is refused.
	if _, err := leases.Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsConflict(err) {
			return l.heldAfterConflict(ctx)
		}
		return err
	}
	return nil
}

// heldAfterConflict settles a takeover refused with a conflict: another
// run took the lock first, or this one did, and the conflict answers a
// retry of its own update whose first answer was lost.
func (l *Lock) heldAfterConflict(ctx context.Context) error {
	lease, err := l.Client.CoordinationV1().Leases(l.Namespace).Get(ctx, ObjectName(l.Group), metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("error when reading the lock of %q: %w", l.Group, err)
	}
	if h := lease.Spec.HolderIdentity; h != nil && *h == l.Holder {
		return nil
	}
	return &HeldError{Group: l.Group, Holder: cmp.Or(ptrString(lease.Spec.HolderIdentity), "another run"), RenewedAt: time.Now(), Expires: time.Now().Add(l.Duration)}
}

func (l *Lock) heldByOther(lease *coordinationv1.Lease) *HeldError {
	s := lease.Spec
	if s.HolderIdentity == nil || *s.HolderIdentity == "" || *s.HolderIdentity == l.Holder || s.RenewTime == nil || s.LeaseDurationSeconds == nil {
		return nil
	}
	expires := s.RenewTime.Add(time.Duration(*s.LeaseDurationSeconds) * time.Second)
	if time.Now().After(expires) || deadOnThisHost(*s.HolderIdentity) {
		return nil
	}
	return &HeldError{Group: l.Group, Holder: *s.HolderIdentity, RenewedAt: s.RenewTime.Time, Expires: expires}
}

// Held reports whether a live run other than l.Holder holds the lock.
func (l *Lock) Held(ctx context.Context) (bool, error) {
	held, err := l.HeldBy(ctx)
	return held != nil, err
}

// HeldBy says which live run other than l.Holder holds the lock and until
// when, or nil when none does.
func (l *Lock) HeldBy(ctx context.Context) (*HeldError, error) {
	lease, err := l.Client.CoordinationV1().Leases(l.Namespace).Get(ctx, ObjectName(l.Group), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("error when reading the lock of %q: %w", l.Group, err)
	}
	return l.heldByOther(lease), nil
}

// KeepAlive renews the lease every Duration/3 until ctx ends. It calls lost
// when the lease was taken by someone else, so the run can stop.
func (l *Lock) KeepAlive(ctx context.Context, lost func(error)) {
	ticker := time.NewTicker(l.Duration / 3)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			leases := l.Client.CoordinationV1().Leases(l.Namespace)
			lease, err := leases.Get(ctx, ObjectName(l.Group), metav1.GetOptions{})
			if err != nil {
				return err
			}
			if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != l.Holder {
				return &HeldError{Group: l.Group, Holder: ptrString(lease.Spec.HolderIdentity), RenewedAt: time.Now(), Expires: time.Now()}
			}
			now := metav1.NewMicroTime(time.Now())
			lease.Spec.RenewTime = &now
			_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
			return err
		})
		var held *HeldError
		if errors.As(err, &held) {
			lost(fmt.Errorf("lost the lock of node group %q to %q", l.Group, held.Holder))
			return
		}
		// Other errors (a blip of the API server) are retried at the next tick;
		// the lease stays ours until it expires.
	}
}

// Release gives the lock up at the end of a run.
func (l *Lock) Release(ctx context.Context) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		leases := l.Client.CoordinationV1().Leases(l.Namespace)
		lease, err := leases.Get(ctx, ObjectName(l.Group), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != l.Holder {
			return nil
		}
		empty := ""
		lease.Spec.HolderIdentity = &empty
		_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
		return err
	})
}

func ptrString(s *string) string {
	if s == nil {
		return ""
	}
	return strings.TrimSpace(*s)
}

// ScaledForOther says the recorded scale-up was made for another version
// than target, whose nodes target replaces too. A rollback (target the
// version before the run) is not such a case: the nodes from before the
// run serve it.
func (c *CloudRecord) ScaledForOther(target string) bool {
	return c.Original != nil && c.ScaledFor != "" && c.ScaledFor != target && target != c.FromVersion
}

// ScaledForRolledBack says the recorded scale-up was made for the run
// that target, the version before it, rolls back: its nodes are outdated,
// and the scale-down removes as many as it added.
func (c *CloudRecord) ScaledForRolledBack(target string) bool {
	return c.Original != nil && c.ScaledFor != "" && c.ScaledFor != target && target == c.FromVersion
}

// Kinds are the provider's names for its group and its template.
func (c *GroupRecord) Kinds() (group, template string) {
	group, template = c.GroupKind, c.TemplateKind
	if group == "" {
		group = "Auto Scaling group"
	}
	if template == "" {
		template = "launch template"
	}
	return group, template
}

// Quarantined is a node left cordoned, tainted and labelled
// upgrade-status=quarantined, and the pods that held its drain.
type Quarantined struct {
	Node string      `json:"node"`
	Held []HeldByPDB `json:"held,omitempty"`
	// Hold says its owner labelled it nodeupgrade.dev/hold=true: skipped
	// without a drain.
	Hold bool `json:"hold,omitempty"`
}

// HeldByPDB is a pod a drain could not evict, and the budgets that held it.
type HeldByPDB struct {
	Pod    string   `json:"pod"` // namespace/name
	Reason string   `json:"reason"`
	PDBs   []string `json:"pdbs,omitempty"` // namespace/name
}
