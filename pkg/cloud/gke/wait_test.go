package gke

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
)

// TestWaitSurvivesTransientErrors: an operation's wait goes on through
// more throttled and unavailable answers than the client's own retries
// take, and stops at the first that is not transient.
func TestWaitSurvivesTransientErrors(t *testing.T) {
	many := []int{503, 429, 500, 502, 504, 503, 503, 429, 503}
	for _, tc := range []struct {
		name  string
		codes []int
		err   string
	}{
		{name: "transient answers", codes: many},
		{name: "a refusal", codes: []int{503, http.StatusForbidden}, err: "403"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeGKE(t)
			np := openPool(t, map[string]string{})
			np.c.pollEvery = time.Millisecond
			f.mu.Lock()
			f.fail[methodOperationGet] = tc.codes
			f.mu.Unlock()
			s, err := np.Settings(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			three := 3
			s.MaxSurge = &three
			err = np.Configure(context.Background(), s)
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || cloud.Transient(err)) {
				t.Errorf("Configure = %v, want error %q", err, tc.err)
			}
		})
	}
}
