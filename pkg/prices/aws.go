package prices

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
)

// awsPublished is the host of AWS's Price List bulk files: the region's
// current EC2 offer file is offers/v1.0/aws/AmazonEC2/current/REGION/index.json
// (https://docs.aws.amazon.com/awsaccountbilling/latest/aboutv2/using-ppslong.html),
// which needs no credentials.
const awsPublished = "https://pricing.us-east-1.amazonaws.com"

// awsProduct is a product of the offer file: its SKU and attributes.
type awsProduct struct {
	SKU           string            `json:"sku"`
	ProductFamily string            `json:"productFamily"`
	Attributes    map[string]string `json:"attributes"`
}

// awsTerm is an offer term of a SKU: its price dimensions, each a unit and
// a price per unit by currency.
type awsTerm struct {
	PriceDimensions map[string]struct {
		Unit         string            `json:"unit"`
		PricePerUnit map[string]string `json:"pricePerUnit"`
	} `json:"priceDimensions"`
}

// awsLinuxOnDemand are the attributes of the instances the plan prices:
// Linux with no pre-installed software on shared tenancy, the price of a
// running instance (capacitystatus Used, not a reservation's unused
// capacity), as the offer file's attributes spell them
// (https://docs.aws.amazon.com/awsaccountbilling/latest/aboutv2/reading-an-offer.html).
var awsLinuxOnDemand = map[string]string{
	"operatingSystem": "Linux", "tenancy": "Shared", "preInstalledSw": "NA", "capacitystatus": "Used",
}

// fetchAWS reads the region's EC2 offer file, streamed (it runs to
// hundreds of megabytes): the products of awsLinuxOnDemand, then their
// OnDemand terms' hourly USD price.
func fetchAWS(ctx context.Context, s Source) (map[string]float64, error) {
	u := s.base(awsPublished) + "/offers/v1.0/aws/AmazonEC2/current/" + url.PathEscape(s.Region) + "/index.json"
	out := map[string]float64{}
	err := s.get(ctx, u, func(r io.Reader) error { return readOffer(json.NewDecoder(r), out) })
	return out, err
}

// readOffer walks the offer file's top-level object: "products" before
// "terms", as AWS writes them.
func readOffer(d *json.Decoder, out map[string]float64) error {
	types := map[string]string{} // SKU → instance type
	return eachKey(d, func(key string) error {
		switch key {
		case "products":
			return eachKey(d, func(string) error {
				var p awsProduct
				if err := d.Decode(&p); err != nil {
					return err
				}
				if typ := p.Attributes["instanceType"]; typ != "" && p.ProductFamily == "Compute Instance" && matches(p.Attributes, awsLinuxOnDemand) {
					types[p.SKU] = typ
				}
				return nil
			})
		case "terms":
			return eachKey(d, func(kind string) error {
				if kind != "OnDemand" {
					return skip(d)
				}
				return eachKey(d, func(sku string) error { return readTerms(d, types[sku], out) })
			})
		}
		return skip(d)
	})
}

// readTerms reads a SKU's OnDemand terms; typ "" skips them.
func readTerms(d *json.Decoder, typ string, out map[string]float64) error {
	if typ == "" {
		return skip(d)
	}
	var terms map[string]awsTerm
	if err := d.Decode(&terms); err != nil {
		return err
	}
	for _, t := range terms {
		for _, pd := range t.PriceDimensions {
			if pd.Unit != "Hrs" {
				continue
			}
			p, err := strconv.ParseFloat(pd.PricePerUnit["USD"], 64)
			if err != nil {
				return fmt.Errorf("price %q of %s is not a number", pd.PricePerUnit["USD"], typ)
			}
			out[typ] = p
		}
	}
	return nil
}

func matches(attrs, want map[string]string) bool {
	for k, v := range want {
		if attrs[k] != v {
			return false
		}
	}
	return true
}

// eachKey reads an object, calling f with the decoder at each key's value
// (which f must consume).
func eachKey(d *json.Decoder, f func(key string) error) error {
	if t, err := d.Token(); err != nil {
		return err
	} else if t != json.Delim('{') {
		return fmt.Errorf("want an object, have %v", t)
	}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return err
		}
		if err := f(t.(string)); err != nil {
			return err
		}
	}
	_, err := d.Token()
	return err
}

// skip consumes one value token by token, holding none of it (the
// Reserved terms are most of the file).
func skip(d *json.Decoder) error {
	depth := 0
	for {
		t, err := d.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}
