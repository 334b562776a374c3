package gce

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	compute "google.golang.org/api/compute/v1"
)

// TestCreateTarget: the copy is inserted with only the image changed and
// its operation waited for, through a slow or briefly failing wait; an
// operation's error, a name taken and a refused image say so.
func TestCreateTarget(t *testing.T) {
	const insert, wait = "POST projects/p/global/instanceTemplates", "POST projects/p/global/operations/op/wait"
	img := "projects/p/global/images/img-2"
	name := CopyName("t-v1", img)
	running := &compute.Operation{Name: "op", Status: "RUNNING"}
	failed := &compute.Operation{Name: "op", Status: "DONE", OperationType: "insert", TargetLink: "projects/p/global/instanceTemplates/" + name,
		Error: &compute.OperationError{Errors: []*compute.OperationErrorErrors{{Code: "QUOTA_EXCEEDED", Message: "Quota 'INSTANCE_TEMPLATES' exceeded.\nLimit: 1"}}}}
	waits := inTurn
	notYet := &apiErr{http.StatusNotFound, "notFound"}
	for _, tc := range []struct {
		name    string
		routes  map[string]any
		wantErr string
		input   bool
	}{
		{name: "done at once", routes: map[string]any{insert: done}},
		{name: "a slow operation", routes: map[string]any{insert: running, wait: waits(running, done)}},
		{name: "a wait briefly unavailable", routes: map[string]any{insert: running, wait: waits(&apiErr{http.StatusServiceUnavailable, "backendError"}, &apiErr{http.StatusForbidden, "rateLimitExceeded"}, done)}},
		{name: "a wait refused", routes: map[string]any{insert: running, wait: &apiErr{http.StatusForbidden, "forbidden"}}, wantErr: `cannot wait for operation "op": 403`},
		{name: "the operation failed", routes: map[string]any{insert: running, wait: failed}, wantErr: "operation insert on " + name + " failed: QUOTA_EXCEEDED: Quota 'INSTANCE_TEMPLATES' exceeded"},
		{name: "made by an earlier run", routes: map[string]any{insert: &apiErr{http.StatusConflict, "alreadyExists"}, "GET projects/p/global/instanceTemplates/" + name: waits(notYet, copyTemplate(name, img))}},
		{name: "the name taken by another", routes: map[string]any{insert: &apiErr{http.StatusConflict, "alreadyExists"}, "GET projects/p/global/instanceTemplates/" + name: waits(notYet, &compute.InstanceTemplate{Name: name, Properties: &compute.InstanceProperties{}})}, wantErr: "exists but is not a copy", input: true},
		{name: "the image refused", routes: map[string]any{insert: &apiErr{http.StatusBadRequest, "invalid"}}, wantErr: `image "` + img + `" was refused for instance template "` + name + `"`, input: true},
		{name: "the insert failing", routes: map[string]any{insert: &apiErr{http.StatusInternalServerError, "backendError"}}, wantErr: `cannot create instance template "` + name + `": 500`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"GET projects/p/global/instanceTemplates/t-v1", "GET projects/p/global/images/img-2"} {
				tc.routes[k] = newScene().routes[k]
			}
			a, p := newAPI(t, tc.routes)
			tgt, err := p.ResolveTarget(context.Background(), "t-v1", "img-2", "")
			if err == nil {
				err = p.CreateTarget(context.Background(), tgt)
			}
			var e *Error
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.As(err, &e) || e.Input() != tc.input) {
				t.Fatalf("got %v, want %q (input %v)", err, tc.wantErr, tc.input)
			}
			if body := a.body(insert); !strings.Contains(body, `"sourceImage":"`+img+`"`) || !strings.Contains(body, `"machineType":"e2-small"`) || !strings.Contains(body, `"name":"`+name+`"`) {
				t.Errorf("inserted %s, want t-v1's properties with image %s", body, img)
			}
		})
	}
}

// inTurn answers each call with the next of answers, the last again
// once they run out.
func inTurn(answers ...any) func(string) any {
	var mu sync.Mutex
	n := 0
	return func(string) any {
		mu.Lock()
		defer mu.Unlock()
		n++
		return answers[min(n, len(answers))-1]
	}
}

// copyTemplate is t-v1 of newScene with image img: the copy a run makes.
func copyTemplate(name, img string) *compute.InstanceTemplate {
	src := newScene().routes["GET projects/p/global/instanceTemplates/t-v1"].(*compute.InstanceTemplate)
	props, _ := copyOf(src, img)
	return &compute.InstanceTemplate{Name: name, Properties: props}
}

// TestWaitGlobalEndsWithItsContext: a wait on an operation that never
// ends stops when the run does.
func TestWaitGlobalEndsWithItsContext(t *testing.T) {
	running := &compute.Operation{Name: "op", Status: "RUNNING"}
	_, p := newAPI(t, map[string]any{"POST projects/p/global/operations/op/wait": running})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.waitGlobal(ctx, running); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want the context's end", err)
	}
}
