package prices

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// gcpPublished is the host of the Cloud Billing Catalog API; Compute
// Engine's SKUs are those of service 6F81-5844-456A
// (https://cloud.google.com/billing/docs/reference/rest/v1/services.skus/list),
// read with an API key.
const (
	gcpPublished = "https://cloudbilling.googleapis.com"
	gcpCompute   = "6F81-5844-456A"
)

// gcpPage is a page of services.skus.list.
type gcpPage struct {
	SKUs          []gcpSKU `json:"skus"`
	NextPageToken string   `json:"nextPageToken"`
}

// gcpSKU is one SKU: its description, category, regions and prices.
type gcpSKU struct {
	Description string `json:"description"`
	Category    struct {
		ResourceFamily string `json:"resourceFamily"`
		UsageType      string `json:"usageType"`
	} `json:"category"`
	ServiceRegions []string `json:"serviceRegions"`
	PricingInfo    []struct {
		PricingExpression struct {
			UsageUnit   string `json:"usageUnit"`
			TieredRates []struct {
				StartUsageAmount float64 `json:"startUsageAmount"`
				UnitPrice        struct {
					CurrencyCode string `json:"currencyCode"`
					Units        string `json:"units"`
					Nanos        int64  `json:"nanos"`
				} `json:"unitPrice"`
			} `json:"tieredRates"`
		} `json:"pricingExpression"`
	} `json:"pricingInfo"`
}

// gcpFamily is a machine series Compute prices per vCPU-hour and per
// GiB-hour of memory: the SKU descriptions of its two on-demand prices
// ("N2 Instance Core running in Americas"), its predefined machine
// types' classes with their memory per vCPU, and their vCPU counts, from
// the machine series pages
// (https://cloud.google.com/compute/docs/general-purpose-machines,
// .../compute-optimized-machines). A machine type costs vCPUs × the core
// price + memory × the RAM price
// (https://cloud.google.com/compute/vm-instance-pricing); a series not
// here is not priced.
type gcpFamily struct {
	series, core, ram string
	classes           map[string]float64 // class → GiB per vCPU
	sizes             []int
}

var gcpFamilies = []gcpFamily{
	{"e2", "E2 Instance Core", "E2 Instance Ram", map[string]float64{"standard": 4, "highmem": 8, "highcpu": 1}, []int{2, 4, 8, 16, 32}},
	{"n2", "N2 Instance Core", "N2 Instance Ram", map[string]float64{"standard": 4, "highmem": 8, "highcpu": 1}, []int{2, 4, 8, 16, 32, 48, 64, 80, 96, 128}},
	{"n2d", "N2D AMD Instance Core", "N2D AMD Instance Ram", map[string]float64{"standard": 4, "highmem": 8, "highcpu": 1}, []int{2, 4, 8, 16, 32, 48, 64, 80, 96, 128, 224}},
	{"n1", "N1 Predefined Instance Core", "N1 Predefined Instance Ram", map[string]float64{"standard": 3.75, "highmem": 6.5, "highcpu": 0.9}, []int{1, 2, 4, 8, 16, 32, 64, 96}},
	{"c2", "Compute optimized Core", "Compute optimized Ram", map[string]float64{"standard": 4}, []int{4, 8, 16, 30, 60}},
}

// maxGCPPages bounds the pages followed.
const maxGCPPages = 100

// fetchGCP reads Compute Engine's SKUs, every page, keeps the on-demand
// core and RAM prices of gcpFamilies in the region, and prices each
// predefined machine type from them.
func fetchGCP(ctx context.Context, s Source) (map[string]float64, error) {
	if s.APIKey == "" {
		return nil, fmt.Errorf("no API key: the Cloud Billing Catalog API takes one")
	}
	unit := map[string]float64{} // SKU description → USD per hour or per GiB-hour
	token := ""
	for pages := 0; pages == 0 || token != ""; pages++ {
		if pages == maxGCPPages {
			return nil, fmt.Errorf("cannot read gcp prices: more than %d pages", maxGCPPages)
		}
		u := fmt.Sprintf("%s/v1/services/%s/skus?currencyCode=USD&pageSize=5000&key=%s", s.base(gcpPublished), gcpCompute, url.QueryEscape(s.APIKey))
		if token != "" {
			u += "&pageToken=" + url.QueryEscape(token)
		}
		var page gcpPage
		if err := s.get(ctx, u, func(r io.Reader) error { return json.NewDecoder(r).Decode(&page) }); err != nil {
			return nil, err
		}
		for _, k := range page.SKUs {
			if p, ok := onDemandIn(k, s.Region); ok {
				desc, _, _ := strings.Cut(k.Description, " running in ")
				unit[desc] = p
			}
		}
		token = page.NextPageToken
	}
	return machinePrices(unit), nil
}

// onDemandIn is a SKU's first-tier USD price, where it is an on-demand
// Compute price of region.
func onDemandIn(k gcpSKU, region string) (float64, bool) {
	if k.Category.ResourceFamily != "Compute" || k.Category.UsageType != "OnDemand" || !slices.Contains(k.ServiceRegions, region) || len(k.PricingInfo) == 0 {
		return 0, false
	}
	for _, r := range k.PricingInfo[0].PricingExpression.TieredRates {
		if r.StartUsageAmount == 0 && r.UnitPrice.CurrencyCode == "USD" {
			units, err := strconv.ParseInt(cmp.Or(r.UnitPrice.Units, "0"), 10, 64)
			return float64(units) + float64(r.UnitPrice.Nanos)/1e9, err == nil
		}
	}
	return 0, false
}

// machinePrices prices every predefined type of the series whose core and
// RAM prices are both known.
func machinePrices(unit map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for _, f := range gcpFamilies {
		core, okCore := unit[f.core]
		ram, okRAM := unit[f.ram]
		if !okCore || !okRAM {
			continue
		}
		for class, gib := range f.classes {
			for _, n := range f.sizes {
				out[fmt.Sprintf("%s-%s-%d", f.series, class, n)] = float64(n)*core + float64(n)*gib*ram
			}
		}
	}
	return out
}
