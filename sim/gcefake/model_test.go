package gcefake

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	compute "google.golang.org/api/compute/v1"
	"google.golang.org/api/googleapi"
)

// TestRequestsBreakingTheModelAreRefused: what compute/v1's discovery
// document refuses is refused 400 in Google's error shape, and nothing is
// made; what it takes is answered.
func TestRequestsBreakingTheModelAreRefused(t *testing.T) {
	srv, svc := startWith(t, Options{})
	igm := func(edit func(*compute.InstanceGroupManager)) func() error {
		return func() error {
			g := &compute.InstanceGroupManager{Name: "green", BaseInstanceName: "green", TargetSize: 1, InstanceTemplate: "global/instanceTemplates/tmpl-old"}
			edit(g)
			_, err := svc.InstanceGroupManagers.Insert(project, zones[0], g).Do()
			return err
		}
	}
	for _, tc := range []struct {
		name, reason, msg string // reason "": answered
		call              func() error
	}{
		{name: "baseInstanceName of 59", reason: "invalid", msg: "baseInstanceName", call: igm(func(g *compute.InstanceGroupManager) { g.BaseInstanceName = "g" + strings.Repeat("x", 58) })},
		{name: "a bad enum", reason: "invalid", msg: "updatePolicy.type", call: igm(func(g *compute.InstanceGroupManager) {
			g.UpdatePolicy = &compute.InstanceGroupManagerUpdatePolicy{Type: "ROLLING"}
		})},
		{name: "no targetSize", reason: "required", msg: "targetSize", call: igm(func(g *compute.InstanceGroupManager) { g.TargetSize = 0 })},
		{name: "an unknown field", reason: "invalid", msg: `Unknown name "size"`, call: func() error {
			return rawCall(srv, http.MethodPost, "projects/"+project+"/zones/"+zones[0]+"/instanceGroupManagers", `{"name":"green","targetSize":1,"size":1}`)
		}},
		{name: "a bad project in the path", reason: "invalid", msg: "'project'", call: func() error {
			_, err := svc.InstanceGroupManagers.Get("Bad_Project", zones[0], "ng").Do()
			return err
		}},
		{name: "a baseInstanceName of 58", call: igm(func(g *compute.InstanceGroupManager) { g.BaseInstanceName = "g" + strings.Repeat("x", 57) })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			var ge *googleapi.Error
			switch {
			case tc.reason == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.reason != "" && (!errors.As(err, &ge) || ge.Code != http.StatusBadRequest || len(ge.Errors) != 1 || ge.Errors[0].Reason != tc.reason || !strings.Contains(ge.Message, tc.msg)):
				t.Errorf("answered %v, want 400 %s naming %s", err, tc.reason, tc.msg)
			}
		})
	}
	if keys := srv.GroupKeys(project); len(keys) != 2 {
		t.Errorf("groups %v, want ng and the one valid green", keys)
	}
}

// rawCall sends a body the Go client would not, and returns the answer's
// error as the client reads it.
func rawCall(srv *Server, method, path, body string) error {
	req, err := http.NewRequest(method, srv.Endpoint+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if err := googleapi.CheckResponse(resp); err != nil {
		return err
	}
	var v any
	return json.NewDecoder(resp.Body).Decode(&v)
}
