package prices

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// servePublished answers the three clouds' price endpoints from testdata,
// as they publish them: AWS's offer file of us-east-1, Azure's Retail
// Prices for westeurope in two pages, GCP's Compute SKUs in two pages
// (with the API key "k"). It counts the requests.
func servePublished(t *testing.T) (*httptest.Server, *int) {
	t.Helper()
	n := new(int)
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*n++
		q := r.URL.Query()
		file := ""
		switch {
		case r.URL.Path == "/offers/v1.0/aws/AmazonEC2/current/us-east-1/index.json":
			file = "aws-index.json"
		case r.URL.Path == "/api/retail/prices" && q.Get("$filter") == "serviceName eq 'Virtual Machines' and armRegionName eq 'westeurope' and priceType eq 'Consumption'":
			file = "azure-page1.json"
			if q.Get("$skip") == "1000" {
				file = "azure-page2.json"
			}
		case r.URL.Path == "/api/retail/prices": // a region it has no meters of
			_, _ = w.Write([]byte(`{"BillingCurrency": "USD", "Items": [], "NextPageLink": null, "Count": 0}`))
			return
		case r.URL.Path == "/v1/services/6F81-5844-456A/skus" && q.Get("key") == "k" && q.Get("currencyCode") == "USD":
			file = "gcp-page1.json"
			if q.Get("pageToken") == "page-2" {
				file = "gcp-page2.json"
			}
		case r.URL.Path == "/v1/services/6F81-5844-456A/skus":
			http.Error(w, `{"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.", "status": "INVALID_ARGUMENT"}}`, http.StatusBadRequest)
			return
		default:
			http.NotFound(w, r)
			return
		}
		b, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			t.Error(err)
		}
		_, _ = w.Write(bytes.ReplaceAll(b, []byte("{{BASE}}"), []byte(srv.URL)))
	}))
	t.Cleanup(srv.Close)
	return srv, n
}

func TestFetch(t *testing.T) {
	day := func() time.Time { return time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC) }
	for _, tc := range []struct {
		name     string
		src      Source
		want     map[string]float64
		requests int
	}{
		// Linux, Shared, no software, Used: not Windows', Dedicated's, an
		// unused reservation's, SQL Web's or a Reserved term's price.
		{name: "aws offer file", src: Source{Cloud: AWS, Region: "us-east-1"},
			want: map[string]float64{"m5.large": 0.096, "c6g.xlarge": 0.136}, requests: 1},
		// Consumption on Linux, not Windows, Spot, Low Priority or a
		// reservation; both pages.
		{name: "azure retail prices", src: Source{Cloud: Azure, Region: "westeurope"},
			want: map[string]float64{"Standard_D4s_v5": 0.192, "Standard_D2s_v3": 0.111}, requests: 2},
		// vCPUs × the core price + GiB × the RAM price, of the region's
		// on-demand SKUs (not Spot's, not Belgium's N2): 4 × 0.02181159 +
		// 16 × 0.00292353.
		{name: "gcp catalog", src: Source{Cloud: GCP, Region: "us-central1", APIKey: "k"},
			want: map[string]float64{"e2-standard-4": 0.134023, "e2-highcpu-2": 0.04947, "e2-highmem-16": 0.723197}, requests: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, n := servePublished(t)
			tc.src.Endpoint, tc.src.Now = srv.URL, day
			got, err := Fetch(context.Background(), tc.src)
			if err != nil {
				t.Fatal(err)
			}
			if got.ReadAt != "2026-11-29" || got.Currency != "USD" || *n != tc.requests {
				t.Errorf("readAt %q, currency %q, %d requests; want 2026-11-29, USD, %d", got.ReadAt, got.Currency, *n, tc.requests)
			}
			for typ, p := range tc.want {
				if got.Prices[typ][tc.src.Region] != p {
					t.Errorf("%s: %v, want %v in %s", typ, got.Prices[typ], p, tc.src.Region)
				}
			}
			if tc.src.Cloud != GCP && len(got.Prices) != len(tc.want) {
				t.Errorf("prices %v, want exactly %v", got.Prices, tc.want)
			}
		})
	}
}

// TestWrittenFileReadsBack: what Write writes is a --price-file the plan
// reads, with the same prices.
func TestWrittenFileReadsBack(t *testing.T) {
	srv, _ := servePublished(t)
	got, err := Fetch(context.Background(), Source{Cloud: AWS, Region: "us-east-1", Endpoint: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "prices.yaml")
	var b bytes.Buffer
	if err := Write(&b, got); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	back, err := plan.ReadPriceFile(path)
	if err != nil {
		t.Fatalf("the written file does not read as --price-file: %v\n%s", err, b.String())
	}
	if back.Prices["m5.large"]["us-east-1"] != 0.096 || back.ReadAt != got.ReadAt {
		t.Errorf("read back %+v, want %+v", back, got)
	}
}

func TestFetchRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  Source
		want string
	}{
		{name: "unknown cloud", src: Source{Cloud: "ibm", Region: "x"}, want: `unknown cloud "ibm": want one of aws, gcp, azure`},
		{name: "region without prices", src: Source{Cloud: Azure, Region: "marsnorth"}, want: `azure publishes no on-demand Linux price in region "marsnorth"`},
		{name: "aws region unknown", src: Source{Cloud: AWS, Region: "mars-1"}, want: "404 Not Found"},
		{name: "gcp without a key", src: Source{Cloud: GCP, Region: "us-central1"}, want: "no API key"},
		// The key stays out of the message.
		{name: "gcp key refused", src: Source{Cloud: GCP, Region: "us-central1", APIKey: "secret"}, want: "API key not valid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := servePublished(t)
			tc.src.Endpoint = srv.URL
			_, err := Fetch(context.Background(), tc.src)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "secret") {
				t.Errorf("error %v, want %q (and no key)", err, tc.want)
			}
		})
	}
}
