package state

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
)

// TestSaveKeepsWhatWasAsked: a control a command records in a live run's
// record (Ask) stays there through the run's own writes from the copy it
// holds, which answer a conflict by reading the record again; the run's
// newer word on it (answered) wins; a new run's record does not inherit
// the last run's.
func TestSaveKeepsWhatWasAsked(t *testing.T) {
	const ns, group = "kube-system", "ng"
	started := time.Now().UTC().Add(-time.Hour)
	for _, tc := range []struct {
		name string
		// run changes the live run's copy after the command asked.
		run          func(r *Record, asked ControlAsk)
		wantAnswered bool
		wantAsked    bool
	}{
		{name: "the live run writes its progress", run: func(r *Record, _ ControlAsk) { r.Batch++ }, wantAsked: true},
		{name: "the live run answers it", run: func(r *Record, a ControlAsk) { a.Answered = true; r.Asked = &a }, wantAsked: true, wantAnswered: true},
		{name: "a new run starts on the group", run: func(r *Record, _ ControlAsk) { r.StartedAt = time.Now().UTC() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			client := fake.NewClientset()
			api := strictConfigMaps(client)
			live := &Store{Client: client, Namespace: ns}
			rec := &Record{NodeGroup: group, Phase: "Drain", StartedAt: started}
			if err := live.Save(ctx, rec); err != nil {
				t.Fatal(err)
			}
			asked := NewAsk("cancel", "")
			stored, err := (&Store{Client: client, Namespace: ns}).Ask(ctx, group, asked)
			if err != nil || stored.Asked == nil || stored.Phase != "Drain" {
				t.Fatalf("ask: %+v, %v; want the record as stored, asked", stored, err)
			}
			tc.run(rec, asked)
			if err := live.Save(ctx, rec); err != nil {
				t.Fatal(err)
			}
			got, err := live.Load(ctx, group)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case (got.Asked != nil) != tc.wantAsked:
				t.Errorf("after the run's write: asked %+v, want asked %v", got.Asked, tc.wantAsked)
			case got.Asked != nil && (got.Asked.Control != "cancel" || got.Asked.Answered != tc.wantAnswered || !got.Asked.At.Equal(asked.At)):
				t.Errorf("after the run's write: asked %+v, want cancel at %v answered %v", got.Asked, asked.At, tc.wantAnswered)
			}
			if !strings.Contains(api.counts(), "conflicts 1") {
				t.Errorf("the run's write met no conflict (%s): it wrote over the ask unread", api.counts())
			}
		})
	}
}

// TestAskWithoutARecord: asking a run that has no record is an error
// naming the group, and creates nothing.
func TestAskWithoutARecord(t *testing.T) {
	client := fake.NewClientset()
	_, err := (&Store{Client: client, Namespace: "kube-system"}).Ask(context.Background(), "ng", NewAsk("cancel", ""))
	if err == nil || !strings.Contains(err.Error(), `"ng"`) {
		t.Fatalf("ask of no record: %v, want an error naming \"ng\"", err)
	}
	if r, _ := (&Store{Client: client, Namespace: "kube-system"}).Load(context.Background(), "ng"); r != nil {
		t.Errorf("ask created a record: %+v", r)
	}
}
