// Package prices reads the clouds' published on-demand prices of
// instance types into the --price-file format (plan.PriceFile): AWS's
// Price List bulk files and Azure's Retail Prices API, which need no
// credentials, and Google's Cloud Billing Catalog API, which takes an API
// key. It runs on a connected machine; the plan only reads its file.
package prices

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// The clouds Fetch reads.
const (
	AWS   = "aws"
	GCP   = "gcp"
	Azure = "azure"
)

// Clouds are the clouds Fetch reads, as --cloud takes them.
var Clouds = []string{AWS, GCP, Azure}

// EndpointEnv names another base URL for every cloud's price endpoint
// (scheme and host, e.g. http://127.0.0.1:8080): the tests' local
// servers.
const EndpointEnv = "NODEUPGRADE_PRICES_ENDPOINT"

// Source is what Fetch reads: a cloud's prices in a region.
type Source struct {
	Cloud, Region string
	// APIKey is GCP's Cloud Billing API key.
	APIKey string
	// Endpoint replaces the cloud's published base URL ("": the
	// published one, or EndpointEnv's).
	Endpoint string
	// Client sends the requests; http.DefaultClient where nil.
	Client *http.Client
	// Now dates the prices; time.Now where nil.
	Now func() time.Time
}

// fetcher reads one cloud's prices per hour by instance type.
type fetcher func(ctx context.Context, s Source) (map[string]float64, error)

var fetchers = map[string]fetcher{AWS: fetchAWS, Azure: fetchAzure, GCP: fetchGCP}

// Fetch reads the on-demand Linux prices per hour of the region's
// instance types, dated today: a price file of one region.
func Fetch(ctx context.Context, s Source) (*plan.PriceFile, error) {
	f := fetchers[s.Cloud]
	if f == nil {
		return nil, fmt.Errorf("unknown cloud %q: want one of %s", s.Cloud, strings.Join(Clouds, ", "))
	}
	got, err := f(ctx, s)
	if err != nil {
		return nil, err
	}
	if len(got) == 0 {
		return nil, fmt.Errorf("%s publishes no on-demand Linux price in region %q: check --region", s.Cloud, s.Region)
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	out := &plan.PriceFile{ReadAt: now().UTC().Format(time.DateOnly), Currency: "USD", Prices: map[string]map[string]float64{}}
	for typ, p := range got {
		// To the millionth of a dollar: the sums of GCP's unit prices
		// carry float noise below it.
		out.Prices[typ] = map[string]float64{s.Region: math.Round(p*1e6) / 1e6}
	}
	return out, nil
}

// Write writes f as YAML, which --price-file reads.
func Write(w io.Writer, f *plan.PriceFile) error {
	b, err := yaml.Marshal(f)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// base is the URL the requests go to: s.Endpoint, EndpointEnv's, or the
// cloud's published one.
func (s Source) base(published string) string {
	for _, b := range []string{s.Endpoint, envEndpoint(), published} {
		if b != "" {
			return strings.TrimSuffix(b, "/")
		}
	}
	return published
}

// get GETs u and hands its body to read; an answer other than 200 is an
// error naming the URL (without its query, which may hold a key) and the
// status.
func (s Source) get(ctx context.Context, u string, read func(io.Reader) error) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	c := s.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("cannot read %s prices: %w", s.Cloud, stripQuery(err, u))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		return fmt.Errorf("cannot read %s prices from %s: %s: %s", s.Cloud, req.URL.Scheme+"://"+req.URL.Host+req.URL.Path, resp.Status, strings.Join(strings.Fields(string(body)), " "))
	}
	if err := read(resp.Body); err != nil {
		return fmt.Errorf("cannot read %s prices from %s: %w", s.Cloud, req.URL.Scheme+"://"+req.URL.Host+req.URL.Path, err)
	}
	return nil
}

func envEndpoint() string { return os.Getenv(EndpointEnv) }

// stripQuery leaves the query (an API key) out of a request's error.
func stripQuery(err error, u string) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		short, _, _ := strings.Cut(u, "?")
		return &url.Error{Op: ue.Op, URL: short, Err: ue.Err}
	}
	return err
}
