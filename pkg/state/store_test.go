package state

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

var configMaps = corev1.SchemeGroupVersion.WithResource("configmaps")

// refuse makes the API server answer the first n requests of verb on
// resource with err (every one for n < 0), and counts them all.
func refuse(c *fake.Clientset, verb, resource string, n int, err error) *atomic.Int32 {
	var seen atomic.Int32
	c.PrependReactor(verb, resource, func(k8stesting.Action) (bool, runtime.Object, error) {
		if i := seen.Add(1); n < 0 || int(i) <= n {
			return true, nil, err
		}
		return false, nil, nil
	})
	return &seen
}

// brokenRecord is a record ConfigMap whose data is no record.
func brokenRecord(group string) *corev1.ConfigMap {
	s := Store{Namespace: lockNS}
	return &corev1.ConfigMap{ObjectMeta: s.meta(ObjectName(group), group), Data: map[string]string{recordKey: "{not json"}}
}

// TestLoadAndListRefused: a record the API server will not give, or one
// that is no record (edited by hand), is an error naming it, never taken
// for a group without a record.
func TestLoadAndListRefused(t *testing.T) {
	forbidden := apierrors.NewForbidden(configMaps.GroupResource(), "", errors.New("no rights"))
	for _, tc := range []struct {
		name    string
		objects []runtime.Object
		refuse  string
		loadErr string
		listErr string
	}{
		{name: "reading records forbidden", refuse: "*",
			loadErr: `error when reading the record of "ng"`, listErr: `error when listing records in namespace "kube-system"`},
		{name: "a record edited into no record", objects: []runtime.Object{brokenRecord("ng")},
			loadErr: `cannot read the record in configmap "kube-system/nodeupgrade-ng"`, listErr: `cannot read the record in configmap "kube-system/nodeupgrade-ng"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientset(tc.objects...)
			if tc.refuse != "" {
				refuse(c, tc.refuse, "configmaps", -1, forbidden)
			}
			s := &Store{Client: c, Namespace: lockNS}
			if r, err := s.Load(context.Background(), "ng"); r != nil || err == nil || !strings.Contains(err.Error(), tc.loadErr) {
				t.Errorf("Load = %+v, %v; want error %q", r, err, tc.loadErr)
			}
			if rs, err := s.List(context.Background()); rs != nil || err == nil || !strings.Contains(err.Error(), tc.listErr) {
				t.Errorf("List = %+v, %v; want error %q", rs, err, tc.listErr)
			}
		})
	}
}

// TestListByNodeGroup: status lists the records of its namespace by node
// group, and only those this tool wrote.
func TestListByNodeGroup(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: lockNS, Name: "nodeupgrade-someone-elses"}, Data: map[string]string{recordKey: "{}"}})
	s := &Store{Client: c, Namespace: lockNS}
	for _, group := range []string{"workers", "-l pool=batch", "apps"} {
		if err := s.Save(ctx, &Record{NodeGroup: group, Phase: "Drain"}); err != nil {
			t.Fatal(err)
		}
	}
	other := &Store{Client: c, Namespace: "other"}
	if err := other.Save(ctx, &Record{NodeGroup: "elsewhere"}); err != nil {
		t.Fatal(err)
	}
	records, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var groups []string
	for _, r := range records {
		groups = append(groups, r.NodeGroup)
	}
	if want := []string{"-l pool=batch", "apps", "workers"}; !slices.Equal(groups, want) {
		t.Errorf("listed %q, want %q", groups, want)
	}
}

// TestSaveRefused: a write the API server refuses for another reason than
// a conflict fails the save at once, leaving the record as it was; a
// conflict whose re-read finds the record deleted (abort) creates it again.
func TestSaveRefused(t *testing.T) {
	const group = "ng"
	forbidden := apierrors.NewForbidden(configMaps.GroupResource(), ObjectName(group), errors.New("no rights"))
	conflict := apierrors.NewConflict(configMaps.GroupResource(), ObjectName(group), errors.New("changed"))
	for _, tc := range []struct {
		name      string
		saved     bool // a record saved through the same Store before
		setup     func(t *testing.T, c *fake.Clientset)
		wantErr   string
		wantPhase string // of the stored record after; "" for none
	}{
		{name: "the first save forbidden", wantErr: "no rights",
			setup: func(t *testing.T, c *fake.Clientset) { refuse(c, "create", "configmaps", -1, forbidden) }},
		{name: "a save forbidden", saved: true, wantErr: "no rights", wantPhase: "Taint",
			setup: func(t *testing.T, c *fake.Clientset) {
				updates := refuse(c, "update", "configmaps", -1, forbidden)
				t.Cleanup(func() {
					if n := updates.Load(); n != 1 {
						t.Errorf("a forbidden update was sent %d times, want once", n)
					}
				})
			}},
		{name: "a conflict, then the record unreadable", saved: true, wantErr: "no rights", wantPhase: "Taint",
			setup: func(t *testing.T, c *fake.Clientset) {
				refuse(c, "update", "configmaps", -1, conflict)
				refuse(c, "get", "configmaps", -1, forbidden)
			}},
		{name: "a conflict, and the record deleted since", saved: true, wantPhase: "Drain",
			setup: func(t *testing.T, c *fake.Clientset) {
				var once atomic.Bool
				c.PrependReactor("update", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
					if once.Swap(true) {
						return false, nil, nil
					}
					if err := c.Tracker().Delete(configMaps, lockNS, ObjectName(group)); err != nil {
						t.Error(err)
					}
					return true, nil, conflict
				})
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c := fake.NewClientset()
			s := &Store{Client: c, Namespace: lockNS}
			if tc.saved {
				if err := s.Save(ctx, &Record{NodeGroup: group, Phase: "Taint"}); err != nil {
					t.Fatal(err)
				}
			}
			tc.setup(t, c)
			err := s.Save(ctx, &Record{NodeGroup: group, Phase: "Drain"})
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("Save: %v, want %q", err, tc.wantErr)
			}
			phase := ""
			if obj, err := c.Tracker().Get(configMaps, lockNS, ObjectName(group)); err == nil {
				r, err := decode(obj.(*corev1.ConfigMap))
				if err != nil {
					t.Fatal(err)
				}
				phase = r.Phase
			}
			if phase != tc.wantPhase {
				t.Errorf("stored record's phase %q, want %q", phase, tc.wantPhase)
			}
		})
	}
}
