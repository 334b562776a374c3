package prices

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"
)

// azurePublished is the host of the Azure Retail Prices API
// (https://learn.microsoft.com/en-us/rest/api/cost-management/retail-prices/azure-retail-prices),
// which needs no credentials.
const azurePublished = "https://prices.azure.com"

// azurePage is a page of Retail Prices: its items and the next page's
// link ("" on the last).
type azurePage struct {
	Items        []azureItem `json:"Items"`
	NextPageLink string      `json:"NextPageLink"`
}

// azureItem is one meter's price, in the API's own field names.
type azureItem struct {
	CurrencyCode  string  `json:"currencyCode"`
	RetailPrice   float64 `json:"retailPrice"`
	ArmRegionName string  `json:"armRegionName"`
	ArmSkuName    string  `json:"armSkuName"`
	SkuName       string  `json:"skuName"`
	ProductName   string  `json:"productName"`
	UnitOfMeasure string  `json:"unitOfMeasure"`
	Type          string  `json:"type"`
}

// maxAzurePages bounds the pages followed (the API answers 1000 items a
// page; a region's virtual machines are a few thousand).
const maxAzurePages = 200

// fetchAzure reads the region's Virtual Machines meters of type
// Consumption, page by page (NextPageLink), keeping Linux's
// (productName not ending in "Windows") that are not Spot or Low
// Priority, per hour, by armSkuName (Standard_D4s_v5, the VM size AKS
// and scale sets name).
func fetchAzure(ctx context.Context, s Source) (map[string]float64, error) {
	filter := fmt.Sprintf("serviceName eq 'Virtual Machines' and armRegionName eq '%s' and priceType eq 'Consumption'", s.Region)
	next := s.base(azurePublished) + "/api/retail/prices?currencyCode=USD&$filter=" + url.QueryEscape(filter)
	out := map[string]float64{}
	for pages := 0; next != ""; pages++ {
		if pages == maxAzurePages {
			return nil, fmt.Errorf("cannot read azure prices: more than %d pages", maxAzurePages)
		}
		var page azurePage
		if err := s.get(ctx, next, func(r io.Reader) error { return json.NewDecoder(r).Decode(&page) }); err != nil {
			return nil, err
		}
		for _, it := range page.Items {
			if linuxConsumption(it, s.Region) {
				out[it.ArmSkuName] = it.RetailPrice
			}
		}
		next = page.NextPageLink
	}
	return out, nil
}

// linuxConsumption reports whether an item is the on-demand Linux price
// per hour of a VM size in region.
func linuxConsumption(it azureItem, region string) bool {
	name := strings.ToLower(it.SkuName)
	return it.Type == "Consumption" && it.ArmSkuName != "" && strings.EqualFold(it.ArmRegionName, region) &&
		it.UnitOfMeasure == "1 Hour" && it.CurrencyCode == "USD" && !strings.HasSuffix(it.ProductName, "Windows") &&
		!strings.Contains(name, "spot") && !strings.Contains(name, "low priority")
}
