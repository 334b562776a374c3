package upgrade

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// EventComponent is the source of the Events the tool records.
const EventComponent = "kubectl-nodeupgrade"

// Recorder writes Kubernetes Events so that "kubectl get events" tells the
// upgrade's history to someone who was not watching. Events are written in
// the background, a few at a time, so a round trip per Event does not hold
// up a drain (a blocked eviction records one, and waits for its budget
// right after); Flush waits for them. A failure to write one never fails
// the upgrade: it is reported once.
type Recorder struct {
	client kubernetes.Interface
	warn   func(error)
	once   sync.Once
	slots  chan struct{} // bounds the writes in flight
	wg     sync.WaitGroup
	// observe is told each node Event's reason as it is recorded (the
	// run's report journal); nil: none.
	observe func(node, reason string)
}

// Observe has f told the reason of each Event recorded on a node from now
// on: the node milestones a report keeps are those Events.
func (r *Recorder) Observe(f func(node, reason string)) {
	if r != nil {
		r.observe = f
	}
}

// eventWrites bounds the Event writes in flight.
const eventWrites = 4

// eventTimeout bounds one Event write, so Flush cannot hang on a lost server.
const eventTimeout = 10 * time.Second

// NewRecorder returns a recorder; warn is told the first write error.
func NewRecorder(client kubernetes.Interface, warn func(error)) *Recorder {
	return &Recorder{client: client, warn: warn, slots: make(chan struct{}, eventWrites)}
}

// Flush waits until the Events recorded so far are written (or failed).
func (r *Recorder) Flush() {
	if r != nil {
		r.wg.Wait()
	}
}

// Node records an event on a node (kept in the default namespace, as the
// kubelet's node events are).
func (r *Recorder) Node(ctx context.Context, node, eventType, reason, format string, args ...any) {
	if r != nil && r.observe != nil {
		r.observe(node, reason)
	}
	r.write(ctx, metav1.NamespaceDefault, corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: node, UID: "" /* names suffice for kubectl describe */}, eventType, reason, fmt.Sprintf(format, args...))
}

// Pod records an event on a pod.
func (r *Recorder) Pod(ctx context.Context, namespace, pod, eventType, reason, format string, args ...any) {
	r.write(ctx, namespace, corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: namespace, Name: pod}, eventType, reason, fmt.Sprintf(format, args...))
}

func (r *Recorder) write(ctx context.Context, namespace string, ref corev1.ObjectReference, eventType, reason, msg string) {
	if r == nil {
		return
	}
	now := metav1.NewTime(time.Now())
	ev := &corev1.Event{
		// named as client-go's recorder names them, not generated: a retry
		// of a create carried out finds the Event there, and writes no other
		ObjectMeta:          metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("%s.%x", ref.Name, now.UnixNano())},
		InvolvedObject:      ref,
		Type:                eventType,
		Reason:              reason,
		Message:             msg,
		Source:              corev1.EventSource{Component: EventComponent},
		ReportingController: "nodeupgrade.dev/" + EventComponent,
		ReportingInstance:   EventComponent,
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
		Action:              reason,
	}
	// not the caller's cancellation: an Event of what was done is still
	// worth writing when the run is being stopped
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), eventTimeout)
	r.wg.Go(func() {
		defer cancel()
		r.slots <- struct{}{}
		defer func() { <-r.slots }()
		_, err := r.client.CoreV1().Events(namespace).Create(ctx, ev, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) && r.warn != nil {
			r.once.Do(func() { r.warn(fmt.Errorf("cannot record events (the upgrade goes on): %w", err)) })
		}
	})
}
