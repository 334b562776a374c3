package aks

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	armcs "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// poolServer answers GET and PUT of one agent pool as ARM does, the
// pool in a provisioning state, and counts the PUTs. A PUT takes the
// body's upgrade settings and, as AKS's reconcile, ends Succeeded. An
// abort finds nothing running (409).
type poolServer struct {
	mu           sync.Mutex
	pool         armcs.AgentPool
	puts, aborts int
}

func (f *poolServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if strings.HasSuffix(r.URL.Path, "/abort") {
		// AKS's answer when no operation runs (the first try's abort
		// done, its answer lost).
		f.aborts++
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusConflict)
		_, _ = w.Write([]byte(`{"error":{"code":"OperationNotAllowed","message":"There is no ongoing operation on agent pool \"pool\" to abort."}}`))
		return
	}
	if r.Method == http.MethodPut {
		f.puts++
		var in armcs.AgentPool
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.pool.Properties.UpgradeSettings = in.Properties.UpgradeSettings
		f.pool.Properties.ProvisioningState = ptrTo("Succeeded")
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(f.pool)
}

// newTestPool is an AgentPool whose clients reach srv.
func newTestPool(t *testing.T, srv *httptest.Server) *AgentPool {
	t.Helper()
	t.Setenv(EndpointEnv, srv.URL)
	t.Setenv(NoAuthEnv, "true")
	c, err := newClients("sub")
	if err != nil {
		t.Fatal(err)
	}
	c.pollEvery = 10 * time.Millisecond
	return &AgentPool{c: c, id: clusterID{subscription: "sub", group: "rg", name: "c1"}, name: "pool"}
}

// TestConfigureWritesNothingToAPoolLeftUnfinished: the settings go to a
// pool whose last operation succeeded, but never to one left Failed or
// Canceled, where AKS would take the write as the order to finish the
// upgrade (abort putting the settings back after cancel would start it
// again): the refusal is the user's to act on, with nothing written.
func TestConfigureWritesNothingToAPoolLeftUnfinished(t *testing.T) {
	for _, tc := range []struct {
		state   string
		refused bool
	}{
		{"Succeeded", false},
		{"Canceled", true},
		{"Failed", true},
	} {
		t.Run(tc.state, func(t *testing.T) {
			f := &poolServer{pool: armcs.AgentPool{Name: ptrTo("pool"), Properties: &armcs.ManagedClusterAgentPoolProfileProperties{
				ProvisioningState: ptrTo(tc.state), OrchestratorVersion: ptrTo("1.32.2"), CurrentOrchestratorVersion: ptrTo("1.31.5"),
				UpgradeSettings: &armcs.AgentPoolUpgradeSettings{MaxSurge: ptrTo("2")}}}}
			srv := httptest.NewServer(f)
			defer srv.Close()
			a := newTestPool(t, srv)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := a.Configure(ctx, plan.UpdateSettings{Other: map[string]string{}})
			if !tc.refused {
				if err != nil || f.puts != 1 {
					t.Fatalf("Configure: %v after %d PUTs, want nil after 1", err, f.puts)
				}
				return
			}
			if f.puts != 0 {
				t.Errorf("%d PUTs to a %s pool, want none", f.puts, tc.state)
			}
			var ae *Error
			if !errors.As(err, &ae) || !ae.Input() || !strings.Contains(err.Error(), "ended "+tc.state) || !strings.Contains(err.Error(), "resume") {
				t.Errorf("want an input error saying the pool ended %s and naming resume, got %v", tc.state, err)
			}
		})
	}
}

// TestCancelAfterALostAnswer: AKS's 409 to an abort ("no ongoing
// operation") on a pool Canceling or Canceled is the abort of a first try
// whose answer was lost: cancel is done. On a pool whose upgrade ended
// otherwise it is AKS's refusal, the user's to read.
func TestCancelAfterALostAnswer(t *testing.T) {
	for _, tc := range []struct {
		state string
		done  bool
	}{
		{"Canceled", true},
		{"Canceling", true},
		{"Succeeded", false},
		{"Failed", false},
	} {
		t.Run(tc.state, func(t *testing.T) {
			f := &poolServer{pool: armcs.AgentPool{Name: ptrTo("pool"), Properties: &armcs.ManagedClusterAgentPoolProfileProperties{ProvisioningState: ptrTo(tc.state)}}}
			srv := httptest.NewServer(f)
			defer srv.Close()
			err := newTestPool(t, srv).CancelUpdate(context.Background(), poolUpdateID)
			if f.aborts == 0 {
				t.Fatal("no abort was sent")
			}
			var ae *Error
			switch {
			case tc.done && err != nil:
				t.Errorf("cancel of a %s pool: %v, want done", tc.state, err)
			case !tc.done && (!errors.As(err, &ae) || !ae.Input() || !strings.Contains(err.Error(), "ended first (OperationNotAllowed: There is no ongoing operation")):
				t.Errorf("cancel of a %s pool: %v, want AKS's refusal saying the upgrade ended first", tc.state, err)
			}
		})
	}
}
