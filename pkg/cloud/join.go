package cloud

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// AwaitJoined waits, from a list and then a watch of the nodes, until a
// node stands for every machine (its provider ID ends in "/" and the
// machine's ID), or until timeout.
func AwaitJoined(ctx context.Context, client kubernetes.Interface, machines []plan.Machine, timeout time.Duration) error {
	waiting := make(map[string]bool, len(machines))
	for _, m := range machines {
		waiting[m.ID] = true
	}
	seen := func(n *corev1.Node) {
		for id := range waiting {
			if strings.HasSuffix(n.Spec.ProviderID, "/"+id) {
				delete(waiting, id)
			}
		}
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := func() error {
		for {
			list, err := client.CoreV1().Nodes().List(wctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			for i := range list.Items {
				seen(&list.Items[i])
			}
			if len(waiting) == 0 {
				return nil
			}
			w, err := client.CoreV1().Nodes().Watch(wctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
			if err != nil {
				return err
			}
			if err := watchUntil(wctx, w, func(n *corev1.Node) bool { seen(n); return len(waiting) == 0 }); err != nil || len(waiting) == 0 {
				return err
			}
			// The server ended the watch (its timeout): list again.
		}
	}()
	// Only a wait that ran out says the machines did not join; a refused
	// list or watch is the server's error.
	if err != nil && ctx.Err() == nil && wctx.Err() != nil {
		var left []string
		for _, m := range machines {
			if waiting[m.ID] {
				left = append(left, m.ID)
			}
		}
		return fmt.Errorf("cannot plan: %s did not join as nodes within %s (--node-ready-timeout), and a plan without them would leave them on their version; nothing was changed: run again once they have joined, or take them out of the group", strings.Join(left, ", "), timeout)
	}
	return err
}

// watchUntil feeds the watch's nodes to done until it says so, the watch
// ends (nil), or ctx does.
func watchUntil(ctx context.Context, w watch.Interface, done func(*corev1.Node) bool) error {
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil
			}
			if n, isNode := ev.Object.(*corev1.Node); isNode && ev.Type != watch.Deleted && done(n) {
				return nil
			}
		}
	}
}
