package upgrade

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/transport/retrytest"
)

func TestRecorderWritesInTheBackground(t *testing.T) {
	tests := []struct {
		name   string
		events int
	}{
		{name: "one", events: 1},
		{name: "more than are written at once", events: 3 * eventWrites},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestClient()
			held := make(chan struct{})
			c.PrependReactor("create", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
				<-held
				return false, nil, nil
			})
			r := NewRecorder(c, func(err error) { t.Error(err) })
			ctx, cancel := context.WithCancel(context.Background())
			for range tc.events {
				// returns while the write is held: a drain does not wait for it
				r.Node(ctx, "n1", corev1.EventTypeNormal, "NodeUpgradeDrained", "drained")
			}
			// a run being stopped still records what it did
			cancel()
			close(held)
			r.Flush()
			if got := len(c.eventsOf(t, "Node", "n1")); got != tc.events {
				t.Errorf("%d events after Flush, want %d", got, tc.events)
			}
		})
	}
}

// TestEventSentTwice: an Event whose create the API server carried out,
// its answer lost, is found when sent again: one Event, no warning.
func TestEventSentTwice(t *testing.T) {
	c := newTestClient()
	resent := retrytest.SentTwice(c.Clientset, "create")
	r := NewRecorder(c, func(err error) { t.Errorf("warned: %v", err) })
	r.Node(context.Background(), "n1", corev1.EventTypeNormal, "NodeUpgradeDrained", "drained")
	r.Flush()
	if len(resent.Writes()) != 1 {
		t.Fatalf("writes sent twice: %v, want the Event's", resent.Writes())
	}
	if got := c.eventsOf(t, "Node", "n1"); len(got) != 1 {
		t.Errorf("events %v, want one", got)
	}
}
