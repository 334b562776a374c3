// Package retrytest makes a fake clientset answer as the API server does
// when the retries of transport.Retrying send a write the server has
// already carried out: the write is carried out once more, and the caller
// gets the second answer (a conflict for an update from the same
// resourceVersion, NotFound for a delete, AlreadyExists for a create, the
// same object for a patch).
package retrytest

import (
	"fmt"
	"slices"
	"strconv"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// Resent are the writes SentTwice sent twice, as "verb resource/name".
type Resent struct {
	mu     sync.Mutex
	writes []string
}

// Writes returns them in the order they were made.
func (r *Resent) Writes() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.writes)
}

// SentTwice carries the first write of each of verbs to each object out
// twice, through the reactors added before it, and answers with the
// second: the first attempt's answer was lost, and the request sent again.
func SentTwice(c *fake.Clientset, verbs ...string) *Resent {
	resent := &Resent{}
	c.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		key := fmt.Sprintf("%s %s/%s", a.GetVerb(), a.GetResource().Resource, objectName(a))
		resent.mu.Lock()
		first := slices.Contains(verbs, a.GetVerb()) && !slices.Contains(resent.writes, key)
		if first {
			resent.writes = append(resent.writes, key)
		}
		resent.mu.Unlock()
		if !first {
			return false, nil, nil
		}
		// the reactors after this one, as the chain is now (reactors run
		// under the fake's lock: they are called, not invoked)
		rest := c.ReactionChain[1:]
		_, _, _ = react(rest, a)
		return react(rest, a)
	})
	return resent
}

// AnswerLost carries out the first write of verb for which match says so,
// through the reactors added before it, and answers err instead of the
// server's answer: a connection lost after the server carried the write
// out, and not retried (the retries' budget spent). It returns the writes
// it answered so.
func AnswerLost(c *fake.Clientset, verb string, match func(k8stesting.Action) bool, err error) *Resent {
	lost := &Resent{}
	c.PrependReactor(verb, "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		lost.mu.Lock()
		first := len(lost.writes) == 0 && match(a)
		if first {
			lost.writes = append(lost.writes, fmt.Sprintf("%s %s/%s", a.GetVerb(), a.GetResource().Resource, objectName(a)))
		}
		lost.mu.Unlock()
		if !first {
			return false, nil, nil
		}
		_, _, _ = react(c.ReactionChain[1:], a)
		return true, nil, err
	})
	return lost
}

func react(chain []k8stesting.Reactor, a k8stesting.Action) (bool, runtime.Object, error) {
	for _, r := range chain {
		if !r.Handles(a) {
			continue
		}
		if handled, obj, err := r.React(a.DeepCopy()); handled {
			return true, obj, err
		}
	}
	return false, nil, fmt.Errorf("no reactor handles %s %s", a.GetVerb(), a.GetResource().Resource)
}

func objectName(a k8stesting.Action) string {
	switch a := a.(type) {
	case k8stesting.DeleteAction:
		return a.GetName()
	case k8stesting.PatchAction:
		return a.GetName()
	case k8stesting.CreateAction: // an update too: both carry the object
		if m, err := meta.Accessor(a.GetObject()); err == nil {
			return m.GetName()
		}
	}
	return ""
}

// ServerVersions makes the fake clientset keep the resourceVersions of
// resource as the API server does, which its tracker does not: every
// create and update gives the object a new one, and an update carrying
// another than the stored one is refused with a conflict.
func ServerVersions(c *fake.Clientset, resource schema.GroupVersionResource) {
	tracker := c.Tracker()
	version := 100
	stamp := func(obj runtime.Object) (runtime.Object, error) {
		obj = obj.DeepCopyObject()
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, err
		}
		version++
		m.SetResourceVersion(strconv.Itoa(version))
		return obj, nil
	}
	// Reactors run under the fake's lock: version needs no other.
	c.PrependReactor("*", resource.Resource, func(a k8stesting.Action) (bool, runtime.Object, error) {
		ns := a.GetNamespace()
		switch a.GetVerb() {
		case "create":
			obj, err := stamp(a.(k8stesting.CreateAction).GetObject())
			if err == nil {
				err = tracker.Create(resource, obj, ns)
			}
			return true, obj, err
		case "update":
			u := a.(k8stesting.UpdateAction)
			m, err := meta.Accessor(u.GetObject())
			if err != nil {
				return true, nil, err
			}
			stored, err := tracker.Get(resource, ns, m.GetName())
			if err != nil {
				return true, nil, err
			}
			sm, _ := meta.Accessor(stored)
			if rv := m.GetResourceVersion(); rv != "" && rv != sm.GetResourceVersion() {
				return true, nil, apierrors.NewConflict(resource.GroupResource(), m.GetName(), fmt.Errorf("resourceVersion %s is not the stored %s", rv, sm.GetResourceVersion()))
			}
			obj, err := stamp(u.GetObject())
			if err == nil {
				err = tracker.Update(resource, obj, ns)
			}
			return true, obj, err
		}
		return false, nil, nil
	})
}
