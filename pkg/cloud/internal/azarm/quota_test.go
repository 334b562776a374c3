package azarm

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
)

// armAnswer is the azcore error of an ARM answer of status with code
// and message.
func armAnswer(status int, code, message string) error {
	body := `{"error":{"code":"` + code + `","message":"` + message + `"}}`
	req, _ := http.NewRequest(http.MethodPatch, "https://management.azure.com/subscriptions/s", nil)
	resp := &http.Response{StatusCode: status, Header: http.Header{"X-Ms-Error-Code": {code}}, Body: io.NopCloser(strings.NewReader(body)), Request: req}
	return runtime.NewResponseError(resp)
}

// TestQuotaRefusalStops: Azure's 409 OperationNotAllowed for a quota
// ("Operation results in exceeding quota limits of Core ...", Learn's
// "Resolve errors for resource quotas") is no busy resource: a provider
// that waits out 409s stops on it, naming the quota and what to do.
func TestQuotaRefusalStops(t *testing.T) {
	e := Endpoint{BusyPasses: true}
	for _, tc := range []struct {
		name      string
		err       error
		quota     bool
		transient bool
	}{
		{"Compute's quota refusal", armAnswer(http.StatusConflict, "OperationNotAllowed", "Operation results in exceeding quota limits of Core. Maximum allowed: 4, Current in use: 4, Additional requested: 2."), true, false},
		{"AKS's quota code", armAnswer(http.StatusBadRequest, "QuotaExceeded", "Provisioning of resource(s) for container service c1 failed: quota exceeded"), true, false},
		{"a busy scale set", armAnswer(http.StatusConflict, "OperationNotAllowed", "Operation 'write' is not allowed on Virtual Machine Scale Set 'ng' since another operation is in progress on it."), false, true},
		{"no ARM answer", errors.New("dial tcp: refused"), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := QuotaExceeded(tc.err); got != tc.quota {
				t.Errorf("QuotaExceeded = %v, want %v", got, tc.quota)
			}
			var w *Error
			if !errors.As(e.Wrap(tc.err, "raise the capacity"), &w) {
				return
			}
			if w.IsTransient != tc.transient || tc.quota != strings.Contains(w.Msg, "ask for more quota") {
				t.Errorf("wrapped %q transient %v, want %v and the quota named %v", w.Msg, w.IsTransient, tc.transient, tc.quota)
			}
		})
	}
}
