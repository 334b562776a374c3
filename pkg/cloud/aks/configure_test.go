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
	// keeps: a PUT keeps each upgrade setting it leaves out, as AKS
	// does; stuck: a PUT changes none (a pool whose settings never come
	// out as sent).
	keeps, stuck bool
	// quota: a PUT is refused for a quota it would exceed.
	quota bool
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
	if r.Method == http.MethodPut && f.quota {
		f.puts++
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("x-ms-error-code", "OperationNotAllowed")
		w.WriteHeader(http.StatusConflict)
		_, _ = w.Write([]byte(`{"error":{"code":"OperationNotAllowed","message":"Operation results in exceeding quota limits of Core. Maximum allowed: 4, Current in use: 4, Additional requested: 2."}}`))
		return
	}
	if r.Method == http.MethodPut {
		f.puts++
		var in armcs.AgentPool
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.pool.Properties.UpgradeSettings = f.merged(in.Properties.UpgradeSettings)
		f.pool.Properties.ProvisioningState = ptrTo("Succeeded")
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(f.pool)
}

// merged are the pool's upgrade settings after a PUT of in.
func (f *poolServer) merged(in *armcs.AgentPoolUpgradeSettings) *armcs.AgentPoolUpgradeSettings {
	have := f.pool.Properties.UpgradeSettings
	switch {
	case f.stuck:
		return have
	case !f.keeps || have == nil:
		return in
	}
	out := *have
	if in != nil && in.MaxSurge != nil {
		out.MaxSurge = in.MaxSurge
	}
	if in != nil && in.DrainTimeoutInMinutes != nil {
		out.DrainTimeoutInMinutes = in.DrainTimeoutInMinutes
	}
	if in != nil && in.NodeSoakDurationInMinutes != nil {
		out.NodeSoakDurationInMinutes = in.NodeSoakDurationInMinutes
	}
	return &out
}

// TestConfigureRestoresSettingsThePoolNeverHad: putting back "none set"
// after a run that set maxSurge and the drain timeout sends AKS's
// defaults for them (AKS keeps a field a PUT leaves out) and is done in
// one write; a pool whose settings never come out as sent ends in an
// error after a bounded number of writes, never a loop.
func TestConfigureRestoresSettingsThePoolNeverHad(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stuck bool
		puts  int
	}{
		{"AKS keeps what a PUT leaves out", false, 1},
		{"the settings never change", true, maxSettingsWrites},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &poolServer{keeps: true, stuck: tc.stuck, pool: armcs.AgentPool{Name: ptrTo("pool"), Properties: &armcs.ManagedClusterAgentPoolProfileProperties{
				ProvisioningState: ptrTo("Succeeded"),
				UpgradeSettings:   &armcs.AgentPoolUpgradeSettings{MaxSurge: ptrTo("2"), DrainTimeoutInMinutes: new(int32(45))}}}}
			srv := httptest.NewServer(f)
			defer srv.Close()
			a := newTestPool(t, srv)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := a.Configure(ctx, plan.UpdateSettings{Other: map[string]string{}})
			if f.puts != tc.puts || (err != nil) != tc.stuck || ctx.Err() != nil {
				t.Errorf("Configure: %v after %d PUTs, want %d PUTs and an error %v", err, f.puts, tc.puts, tc.stuck)
			}
			if tc.stuck && (err == nil || !strings.Contains(err.Error(), "az aks nodepool update")) {
				t.Errorf("want the error to name az aks nodepool update, got %v", err)
			}
		})
	}
}

// TestConfigureStopsOnAQuotaRefusal: a 409 OperationNotAllowed for a
// quota (Learn, "Resolve errors for resource quotas") is not AKS busy
// with another operation: Configure stops after the one PUT, naming it,
// instead of waiting for an operation that is not there.
func TestConfigureStopsOnAQuotaRefusal(t *testing.T) {
	f := &poolServer{quota: true, pool: armcs.AgentPool{Name: ptrTo("pool"), Properties: &armcs.ManagedClusterAgentPoolProfileProperties{
		ProvisioningState: ptrTo("Succeeded")}}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	a := newTestPool(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := a.Configure(ctx, plan.UpdateSettings{Other: map[string]string{setMaxSurge: "3"}})
	if f.puts != 1 || err == nil || !strings.Contains(err.Error(), "exceeding quota limits of Core") || ctx.Err() != nil {
		t.Errorf("Configure: %v after %d PUTs, want the quota named after 1", err, f.puts)
	}
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
