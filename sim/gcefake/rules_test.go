package gcefake

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	compute "google.golang.org/api/compute/v1"
	"google.golang.org/api/googleapi"
)

// wantCode fails unless err is the API's answer with code.
func wantCode(t *testing.T, err error, code int) {
	t.Helper()
	var ge *googleapi.Error
	if !errors.As(err, &ge) || ge.Code != code {
		t.Fatalf("got %v, want HTTP %d", err, code)
	}
}

// TestInsertNames: the name and baseInstanceName rules of compute-api.json.
func TestInsertNames(t *testing.T) {
	_, svc, _ := newScene(t, 0, Opportunistic)
	for _, tc := range []struct {
		name, groupName, base string
		code                  int // 0: accepted
	}{
		{"58-character base", strings.Repeat("a", 58), "", 0},
		{"59-character name as base", strings.Repeat("b", 59), "", http.StatusBadRequest},
		{"63-character name, short base", strings.Repeat("c", 63), "c", 0},
		{"64-character name", strings.Repeat("d", 64), "d", http.StatusBadRequest},
		{"upper case", "Nodes", "", http.StatusBadRequest},
		{"sequential base", "seq", "seq-###", 0},
		{"base ending in a hyphen", "hy", "hy-", 0},
		{"base with an underscore", "us", "u_s", http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := svc.InstanceGroupManagers.Insert(project, "us-central1-a", &compute.InstanceGroupManager{
				Name: tc.groupName, BaseInstanceName: tc.base, TargetSize: 0, ForceSendFields: []string{"TargetSize"},
				InstanceTemplate: "global/instanceTemplates/tmpl-old",
			}).Context(context.Background()).Do()
			if tc.code == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantCode(t, err, tc.code)
		})
	}
}
