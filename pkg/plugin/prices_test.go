package plugin

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/prices"
)

// TestPricesFetch: bad flags exit 2 naming the flag before any request;
// a fetch from AWS's offer file (a local server in its place) writes a
// file --price-file reads.
func TestPricesFetch(t *testing.T) {
	requests := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests++
		if r.URL.Path != "/offers/v1.0/aws/AmazonEC2/current/us-east-1/index.json" {
			http.NotFound(w, r)
			return
		}
		http.ServeFile(w, r, filepath.Join("..", "prices", "testdata", "aws-index.json"))
	}))
	defer srv.Close()
	t.Setenv(prices.EndpointEnv, srv.URL)
	t.Setenv(gcpAPIKeyEnv, "")
	out := filepath.Join(t.TempDir(), "prices.yaml")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown cloud", []string{"--cloud", "ibm", "--region", "us-east-1"}, ExitUsage, `invalid --cloud "ibm": want one of aws, gcp, azure`},
		{"no region", []string{"--cloud", "aws"}, ExitUsage, "--region is required"},
		{"gcp without a key", []string{"--cloud", "gcp", "--region", "us-central1"}, ExitUsage, "--cloud gcp needs --api-key"},
		{"a key for aws", []string{"--cloud", "aws", "--region", "us-east-1", "--api-key", "k"}, ExitUsage, "--api-key is GCP's"},
		{"aws to a file", []string{"--cloud", "aws", "--region", "us-east-1", "-o", out}, ExitOK, "wrote the aws prices of 2 instance types in us-east-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := requests
			_, stderr, code := executeBare(t, "", append([]string{"prices", "fetch"}, tc.args...)...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q: want %d with %q", code, stderr, tc.code, tc.want)
			}
			if tc.code == ExitUsage && requests != before {
				t.Errorf("bad input sent %d requests", requests-before)
			}
		})
	}
	f, err := plan.ReadPriceFile(out)
	if err != nil || f.Prices["m5.large"]["us-east-1"] != 0.096 {
		b, _ := os.ReadFile(out)
		t.Fatalf("the written file as --price-file: %v, %+v\n%s", err, f, b)
	}
}
