package state

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
)

// RequestAnnotation on a record's ConfigMap carries a request from another
// terminal to the run (cancel, complete, rollback). It is an annotation, not
// part of the record, so the run's own writes of the record never lose it.
const RequestAnnotation = "nodeupgrade.dev/request"

// The requests.
const (
	RequestCancel   = "cancel"
	RequestComplete = "complete"
	RequestRollback = "rollback"
)

// Requests reads and writes the requests of one node group's run.
type Requests struct {
	Store *Store
	Group string
}

// Send leaves a request for the run.
func (r *Requests) Send(ctx context.Context, req string) error {
	return r.annotate(ctx, req)
}

// Clear removes the pending request.
func (r *Requests) Clear(ctx context.Context) error {
	return r.annotate(ctx, "")
}

func (r *Requests) annotate(ctx context.Context, req string) error {
	var value any = req
	if req == "" {
		value = nil // a merge patch null removes the key
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{RequestAnnotation: value}}})
	name := ObjectName(r.Group)
	cm, err := r.Store.Client.CoreV1().ConfigMaps(r.Store.Namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	// The patch changed the ConfigMap: the Store's next Save updates from
	// what it returned, not from the copy before it (a conflict).
	if err == nil {
		r.Store.remember(name, cm)
	}
	if err != nil && !(req == "" && apierrors.IsNotFound(err)) {
		return fmt.Errorf("error when writing a request to the run of %q: %w", r.Group, err)
	}
	return nil
}

// Pending returns the request waiting for the run, or "".
func (r *Requests) Pending(ctx context.Context) (string, error) {
	cm, err := r.Store.Client.CoreV1().ConfigMaps(r.Store.Namespace).Get(ctx, ObjectName(r.Group), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("error when reading the requests to the run of %q: %w", r.Group, err)
	}
	return cm.Annotations[RequestAnnotation], nil
}

// Watch sends every request as it arrives, until ctx ends.
func (r *Requests) Watch(ctx context.Context) (<-chan string, error) {
	w, err := r.Store.Client.CoreV1().ConfigMaps(r.Store.Namespace).Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", ObjectName(r.Group)).String(),
	})
	if err != nil {
		return nil, fmt.Errorf("error when watching the requests to the run of %q: %w", r.Group, err)
	}
	out := make(chan string, 1)
	go func() {
		defer w.Stop()
		defer close(out)
		for ev := range w.ResultChan() {
			cm, ok := ev.Object.(*corev1.ConfigMap)
			if !ok {
				continue
			}
			if req := cm.Annotations[RequestAnnotation]; req != "" {
				select {
				case out <- req:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out, nil
}
