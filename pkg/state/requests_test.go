package state

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestRequestsWithoutARun: a request to a group without a record (no run
// started, or abort deleted it) is refused, and clearing it is done; an
// API server that cannot be read or written says so.
func TestRequestsWithoutARun(t *testing.T) {
	forbidden := apierrors.NewForbidden(configMaps.GroupResource(), ObjectName("ng"), errors.New("no rights"))
	for _, tc := range []struct {
		name                          string
		record                        bool
		refuse                        string // the verb the API server refuses
		sendErr, clearErr, pendingErr string
	}{
		{name: "no record", sendErr: `error when writing a request to the run of "ng"`},
		{name: "requests forbidden", record: true, refuse: "patch",
			sendErr: "no rights", clearErr: `error when writing a request to the run of "ng"`},
		{name: "the record unreadable", record: true, refuse: "get",
			pendingErr: `error when reading the requests to the run of "ng"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c := fake.NewClientset()
			s := &Store{Client: c, Namespace: lockNS}
			if tc.record {
				if err := s.Save(ctx, &Record{NodeGroup: "ng"}); err != nil {
					t.Fatal(err)
				}
			}
			if tc.refuse != "" {
				refuse(c, tc.refuse, "configmaps", -1, forbidden)
			}
			r := &Requests{Store: s, Group: "ng"}
			for _, call := range []struct {
				what string
				err  error
				want string
			}{
				{"send", r.Send(ctx, RequestCancel), tc.sendErr},
				{"clear", r.Clear(ctx), tc.clearErr},
			} {
				if call.want == "" && call.err != nil || call.want != "" && (call.err == nil || !strings.Contains(call.err.Error(), call.want)) {
					t.Errorf("%s: %v, want %q", call.what, call.err, call.want)
				}
			}
			pending, err := r.Pending(ctx)
			if tc.pendingErr == "" && (err != nil || pending != "") || tc.pendingErr != "" && (err == nil || !strings.Contains(err.Error(), tc.pendingErr)) {
				t.Errorf("pending: %q, %v; want none, error %q", pending, err, tc.pendingErr)
			}
		})
	}
}

// TestWatchRequests: the run is sent each request as it arrives, in
// order, from its own group's ConfigMap only; writes without a request
// and events that carry no ConfigMap are passed over; the channel closes
// when the watch ends.
func TestWatchRequests(t *testing.T) {
	c := fake.NewClientset()
	w := watch.NewFake()
	var selector string
	c.PrependWatchReactor("configmaps", func(a k8stesting.Action) (bool, watch.Interface, error) {
		selector = a.(k8stesting.WatchAction).GetWatchRestrictions().Fields.String()
		return true, w, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, err := (&Requests{Store: &Store{Client: c, Namespace: lockNS}, Group: "ng"}).Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := "metadata.name=" + ObjectName("ng"); selector != want {
		t.Errorf("watched %q, want %q", selector, want)
	}
	w.Modify(requested(""))
	w.Error(&metav1.Status{Status: metav1.StatusFailure, Reason: metav1.StatusReasonExpired})
	w.Modify(requested(RequestCancel))
	w.Modify(requested(""))
	w.Modify(requested(RequestRollback))
	for _, want := range []string{RequestCancel, RequestRollback} {
		if got := receive(t, out); got != want {
			t.Errorf("request %q, want %q", got, want)
		}
	}
	w.Stop()
	if req, open := <-out; open {
		t.Errorf("request %q after the watch ended, want the channel closed", req)
	}
}

// TestWatchRequestsRunStopped: a run that stops while a request waits for
// it ends the watch and closes the channel, rather than block on a
// request nobody reads.
func TestWatchRequestsRunStopped(t *testing.T) {
	c := fake.NewClientset()
	w := watch.NewFake()
	c.PrependWatchReactor("configmaps", func(k8stesting.Action) (bool, watch.Interface, error) { return true, w, nil })
	ctx, cancel := context.WithCancel(context.Background())
	out, err := (&Requests{Store: &Store{Client: c, Namespace: lockNS}, Group: "ng"}).Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w.Modify(requested(RequestCancel))   // waits in the channel
	w.Modify(requested(RequestComplete)) // taken from the watch, nowhere to go
	cancel()
	// Read only once it stopped: a read before would make room for the
	// second request, and the watch of this fake, unlike the API server's,
	// does not end with ctx.
	for deadline := time.Now().Add(10 * time.Second); !w.IsStopped(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("watch not stopped after the run stopped")
		}
	}
	if got := receive(t, out); got != RequestCancel {
		t.Errorf("request %q, want %q", got, RequestCancel)
	}
	select {
	case req, open := <-out:
		if open {
			t.Errorf("request %q after the run stopped, want the channel closed", req)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("channel still open after the run stopped")
	}
}

// TestWatchRequestsRefused: a watch the API server refuses is an error
// naming the group.
func TestWatchRequestsRefused(t *testing.T) {
	c := fake.NewClientset()
	c.PrependWatchReactor("configmaps", func(k8stesting.Action) (bool, watch.Interface, error) {
		return true, nil, apierrors.NewForbidden(configMaps.GroupResource(), "", errors.New("no rights"))
	})
	out, err := (&Requests{Store: &Store{Client: c, Namespace: lockNS}, Group: "ng"}).Watch(context.Background())
	if out != nil || err == nil || !strings.Contains(err.Error(), `error when watching the requests to the run of "ng"`) {
		t.Errorf("Watch = %v, %v; want the refusal", out, err)
	}
}

// requested is the record ConfigMap of "ng" carrying req ("" for none).
func requested(req string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: lockNS, Name: ObjectName("ng"), Annotations: map[string]string{}}}
	if req != "" {
		cm.Annotations[RequestAnnotation] = req
	}
	return cm
}

func receive(t *testing.T, out <-chan string) string {
	t.Helper()
	select {
	case req, ok := <-out:
		if !ok {
			t.Fatal("channel closed, want a request")
		}
		return req
	case <-time.After(10 * time.Second):
		t.Fatal("no request sent")
	}
	return ""
}
