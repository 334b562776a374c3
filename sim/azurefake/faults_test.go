package azurefake

import (
	"context"
	"net/http"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
)

// TestThrottleRetryAfter: the fake's 429 carries ARM's Retry-After, tens
// of seconds unless a test asks for fewer
// (https://learn.microsoft.com/en-us/azure/azure-resource-manager/management/request-limits-and-throttling#error-code),
// in whole seconds rounded up (RFC 9110 10.2.3 delay-seconds).
func TestThrottleRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after time.Duration
		want  string
	}{
		{"ARM's default", 0, "20"},
		{"a test's second", time.Second, "1"},
		{"a fraction rounded up", 1500 * time.Millisecond, "2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := Start(context.Background(), fake.NewClientset(), Options{Faults: 1, FaultSeed: 1, RetryAfter: tc.after})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(srv.Close)
			url := srv.URL + "/subscriptions/" + srv.Subscription() + "/resourceGroups/rg/providers/Microsoft.ContainerService/managedClusters/c1?api-version=" + APIVersion
			for range 50 {
				resp, err := http.Get(url)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode == http.StatusTooManyRequests {
					if got := resp.Header.Get("Retry-After"); got != tc.want {
						t.Fatalf("Retry-After %q, want %q", got, tc.want)
					}
					return
				}
			}
			t.Fatal("no 429 in 50 requests at a fault rate of 1")
		})
	}
}
