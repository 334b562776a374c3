package azarm

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

const instanceID = "azure:///subscriptions/s1/resourceGroups/rg/providers/Microsoft.Compute/virtualMachineScaleSets/ng/virtualMachines/3"

func TestParseInstanceID(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want InstanceID
		ok   bool
	}{
		{instanceID, InstanceID{"s1", "rg", "ng", "3"}, true},
		{strings.ToLower(instanceID), InstanceID{"s1", "rg", "ng", "3"}, true},
		{"azure:///subscriptions/s1/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm1", InstanceID{}, false},
		{"azure:///subscriptions/s1/resourceGroups/rg/providers/Microsoft.Network/virtualMachineScaleSets/ng/virtualMachines/3", InstanceID{}, false},
		{"azure:///subscriptions/s1/resourceGroups//providers/Microsoft.Compute/virtualMachineScaleSets/ng/virtualMachines/3", InstanceID{}, false},
		{"aws:///us-east-1a/i-0abc", InstanceID{}, false},
	} {
		t.Run(tc.id, func(t *testing.T) {
			got, ok := ParseInstanceID(tc.id)
			if got != tc.want || ok != tc.ok {
				t.Errorf("got %+v %v, want %+v %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestCodeStatusDeref(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		code   string
		status int
	}{
		{"an ARM answer", armAnswer(http.StatusNotFound, "ResourceNotFound", "gone"), "ResourceNotFound", http.StatusNotFound},
		{"no ARM answer", errors.New("dial tcp: refused"), "", 0},
		{"no error", nil, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, s := Code(tc.err)
			if c != tc.code || s != tc.status || Status(tc.err) != tc.status {
				t.Errorf("Code = %q %d, Status = %d; want %q %d", c, s, Status(tc.err), tc.code, tc.status)
			}
		})
	}
	v := int32(3)
	if Deref(&v) != 3 || Deref[int32](nil) != 0 || Deref[string](nil) != "" {
		t.Error("Deref: want the value, the zero value for nil")
	}
}

// TestWrapSaysWhatFailed: a 403 is the user's to fix, a 429 or 5xx
// passes, a network failure names the endpoint and its settings, and a
// cancelled context is no cloud error.
func TestWrapSaysWhatFailed(t *testing.T) {
	e := Endpoint{Env: "NODEUPGRADE_AZARM_TEST_ENDPOINT"}
	for _, tc := range []struct {
		name               string
		err                error
		input, transient   bool
		unreachable, plain bool
	}{
		{"forbidden", armAnswer(http.StatusForbidden, "AuthorizationFailed", "no"), true, false, false, false},
		{"throttled", armAnswer(http.StatusTooManyRequests, "TooManyRequests", "slow down"), false, true, false, false},
		{"server error", armAnswer(http.StatusInternalServerError, "InternalServerError", "oops"), false, true, false, false},
		{"busy, where it does not pass", armAnswer(http.StatusConflict, "OperationNotAllowed", "another operation is in progress"), false, false, false, false},
		{"network", errors.New("dial tcp: refused"), false, false, true, false},
		{"cancelled", context.Canceled, false, false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := e.Wrap(tc.err, "read %q", "ng")
			if !strings.HasPrefix(err.Error(), `cannot read "ng"`) {
				t.Errorf("Wrap = %q, want it to say what could not be done", err)
			}
			var ue *cloud.UnreachableError
			if errors.As(err, &ue) != tc.unreachable {
				t.Errorf("Wrap = %#v, unreachable want %v", err, tc.unreachable)
			}
			var ce *Error
			if errors.As(err, &ce) == tc.plain && !tc.unreachable {
				t.Fatalf("Wrap = %#v, a cloud error want %v", err, !tc.plain)
			}
			if ce != nil && (ce.IsInput != tc.input || ce.IsTransient != tc.transient) {
				t.Errorf("Wrap = %+v, want input %v transient %v", ce, tc.input, tc.transient)
			}
		})
	}
}

// localEndpoint is an Endpoint whose environment names srv, with the
// fixed token.
func localEndpoint(t *testing.T, srv *httptest.Server) Endpoint {
	e := Endpoint{Env: "NODEUPGRADE_AZARM_TEST_ENDPOINT", NoAuthEnv: "NODEUPGRADE_AZARM_TEST_NO_AUTH"}
	t.Setenv(e.Env, srv.URL)
	t.Setenv(e.NoAuthEnv, "true")
	return e
}

type header struct{}

func (header) Do(req *policy.Request) (*http.Response, error) {
	req.Raw().Header.Set("X-Test-Policy", "on")
	return req.Next()
}

// TestConnectSendsThroughTheEndpoint: the pipeline reaches the
// environment's endpoint with the fixed token and the extra policy, and
// the URL is Azure's public cloud when no endpoint is set.
func TestConnectSendsThroughTheEndpoint(t *testing.T) {
	var auth, pol string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth, pol = r.Header.Get("Authorization"), r.Header.Get("X-Test-Policy")
		_, _ = w.Write([]byte(`{"value":[{"actions":["*"]}]}`))
	}))
	defer srv.Close()
	e := localEndpoint(t, srv)
	_, _, pl, err := e.Connect("azarm-test", header{})
	if err != nil {
		t.Fatal(err)
	}
	perms, err := e.ListPermissions(context.Background(), pl, "/subscriptions/s")
	if err != nil || len(perms) != 1 || auth != "Bearer nodeupgrade-local" || pol != "on" {
		t.Errorf("ListPermissions = %+v, %v with Authorization %q and the policy %q", perms, err, auth, pol)
	}
	if e.URL() != srv.URL {
		t.Errorf("URL = %q, want the environment's %q", e.URL(), srv.URL)
	}
	if got := (Endpoint{Env: "NODEUPGRADE_AZARM_TEST_UNSET"}).URL(); got != "https://management.azure.com" {
		t.Errorf("URL without the environment = %q, want Azure's public cloud", got)
	}
}

// TestStatusReadableAtTheLocation: ARM answers a read of an unknown
// operation's status with the resource provider's 404 (or 400) when the
// caller may read there, and with 403 AuthorizationFailed when no role
// allows it at the subscription's location (Learn, "Track asynchronous
// Azure operations"); anything else is an error, and a call that needs
// the read is missing only in the second case.
func TestStatusReadableAtTheLocation(t *testing.T) {
	calls := []Call{{Action: "Microsoft.Compute/locations/operations/read", Call: "poll", AtLocation: true},
		{Action: "Microsoft.Compute/virtualMachineScaleSets/read", Call: "Get"}}
	for _, tc := range []struct {
		name    string
		status  int
		code    string
		ok      bool
		wantErr bool
	}{
		{"readable: not found", http.StatusNotFound, "NotFound", true, false},
		{"readable: bad id", http.StatusBadRequest, "InvalidOperationId", true, false},
		{"readable: found", http.StatusOK, "", true, false},
		{"no role at the location", http.StatusForbidden, "AuthorizationFailed", false, false},
		{"another refusal", http.StatusForbidden, "RequestDisallowedByPolicy", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var path string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				path = r.URL.Path
				if tc.status != http.StatusOK {
					w.Header().Set("x-ms-error-code", tc.code)
					w.WriteHeader(tc.status)
					_, _ = w.Write([]byte(`{"error":{"code":"` + tc.code + `","message":"m"}}`))
					return
				}
				_, _ = w.Write([]byte(`{}`))
			}))
			defer srv.Close()
			e := localEndpoint(t, srv)
			_, _, pl, err := e.Connect("azarm-test")
			if err != nil {
				t.Fatal(err)
			}
			loc := srv.URL + "/subscriptions/s/providers/Microsoft.Compute/locations/westeurope"
			ok, err := StatusReadable(context.Background(), pl, loc, "2024-07-01")
			if ok != tc.ok || (err != nil) != tc.wantErr || !strings.HasSuffix(path, "/locations/westeurope/operations/"+unknownOperation) {
				t.Errorf("StatusReadable = %v, %v at %s; want %v, error %v", ok, err, path, tc.ok, tc.wantErr)
			}
			missing, err := MissingAtLocation(context.Background(), pl, calls, loc, "2024-07-01")
			if want := !tc.ok && !tc.wantErr; (len(missing) == 1) != want || (err != nil) != tc.wantErr {
				t.Errorf("MissingAtLocation = %+v, %v; want one missing %v", missing, err, want)
			}
		})
	}
}

func TestMissingAndCannotAsk(t *testing.T) {
	calls := []Call{
		{Action: "Microsoft.Compute/virtualMachineScaleSets/write", Call: "Update"},
		{Action: "Microsoft.Compute/skus/read", Call: "List SKUs", Optional: true},
		{Action: "Microsoft.Compute/locations/operations/read", Call: "poll", AtLocation: true},
		{Action: "Microsoft.Compute/virtualMachineScaleSets/delete", Call: "Delete", For: plan.CapNewGroups},
	}
	got := Missing(calls, []Permission{{Actions: []string{"*/read", "Microsoft.Compute/virtualMachineScaleSets/delete"}}})
	if len(got) != 1 || got[0].Permission != "Microsoft.Compute/virtualMachineScaleSets/write" {
		t.Errorf("Missing = %+v, want only the write (optional and location calls asked elsewhere)", got)
	}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{armAnswer(http.StatusForbidden, "AuthorizationFailed", "no"), true},
		{armAnswer(http.StatusUnauthorized, "InvalidAuthenticationToken", "no"), true},
		{armAnswer(http.StatusNotFound, "NotFound", "no"), true},
		{armAnswer(http.StatusInternalServerError, "InternalServerError", "no"), false},
		{errors.New("dial tcp: refused"), false},
	} {
		if CannotAsk(tc.err) != tc.want {
			t.Errorf("CannotAsk(%v) = %v", tc.err, !tc.want)
		}
	}
}

// TestOptionsAskEntraWithoutTheLocalToken: without the no-auth setting
// the credential is DefaultAzureCredential's chain (made offline), with
// the long Retry-After cap.
func TestOptionsAskEntraWithoutTheLocalToken(t *testing.T) {
	e := Endpoint{Env: "NODEUPGRADE_AZARM_TEST_ENDPOINT", NoAuthEnv: "NODEUPGRADE_AZARM_TEST_NO_AUTH"}
	t.Setenv(e.Env, "")
	t.Setenv(e.NoAuthEnv, "")
	opts, cred, err := e.Options()
	if err != nil {
		t.Skipf("no credential chain here: %v", err)
	}
	if _, ok := cred.(staticToken); ok || opts.Retry.MaxRetryDelay != MaxRetryAfter || opts.InsecureAllowCredentialWithHTTP {
		t.Errorf("Options = %+v %T, want the Entra chain and the %s cap", opts, cred, MaxRetryAfter)
	}
}
