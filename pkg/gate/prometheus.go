package gate

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// maxPoints bounds a range query's samples per series: Prometheus refuses
// more than 11,000; a step of a 500th of the window keeps far below.
const maxPoints = 500

// promResponse is the Prometheus HTTP API's envelope
// (https://prometheus.io/docs/prometheus/latest/querying/api/#format-overview).
type promResponse struct {
	Status    string `json:"status"`
	ErrorType string `json:"errorType"`
	Error     string `json:"error"`
	Data      struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	} `json:"data"`
}

// series is a matrix's or a vector's element; Value an instant's sample.
type series struct {
	Metric map[string]string `json:"metric"`
	Values [][2]any          `json:"values"`
	Value  [2]any            `json:"value"`
}

// prometheus evaluates a query gate: a range query over the window (an
// instant query when it is one), every sample held to the threshold.
func (e Evaluator) prometheus(ctx context.Context, spec Spec, v *Verdict) {
	u, err := url.Parse(strings.TrimSuffix(e.PrometheusURL, "/"))
	if err != nil || u.Host == "" {
		v.Reason, v.Detail = ReasonUnreachable, fmt.Sprintf("invalid --prometheus-url %q", e.PrometheusURL)
		return
	}
	q := url.Values{"query": {spec.Query}}
	if w := v.To.Sub(v.From); w >= time.Second {
		step := max(time.Second, (w / maxPoints).Truncate(time.Second))
		q.Set("start", promTime(v.From))
		q.Set("end", promTime(v.To))
		q.Set("step", strconv.FormatFloat(step.Seconds(), 'f', -1, 64))
		u.Path += "/api/v1/query_range"
	} else {
		q.Set("time", promTime(v.To))
		u.Path += "/api/v1/query"
	}
	resp, err := e.promQuery(ctx, u.String(), q)
	if err != nil {
		v.Reason, v.Detail = ReasonUnreachable, err.Error()
		return
	}
	if resp.Status != "success" {
		v.Reason, v.Detail = ReasonQueryError, strings.TrimSpace(resp.ErrorType+": "+resp.Error)
		return
	}
	samples, err := resp.samples()
	if err != nil {
		v.Reason, v.Detail = ReasonQueryError, err.Error()
		return
	}
	judge(spec, samples, v)
}

// promQuery posts the query (form-encoded, as Prometheus takes long
// queries) and decodes the envelope, also of a refused query.
func (e Evaluator) promQuery(ctx context.Context, endpoint string, q url.Values) (*promResponse, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(q.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := e.client().Do(req)
	if err != nil {
		return nil, fmt.Errorf("error when querying Prometheus at %s (check --prometheus-url): %w", e.PrometheusURL, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 32<<20))
	if err != nil {
		return nil, fmt.Errorf("error when reading Prometheus's answer from %s: %w", e.PrometheusURL, err)
	}
	var resp promResponse
	if err := json.Unmarshal(body, &resp); err != nil || resp.Status == "" {
		return &promResponse{Status: "error", ErrorType: res.Status, Error: fmt.Sprintf("not a Prometheus API answer from %s: %.80q", endpoint, body)}, nil
	}
	return &resp, nil
}

// sample is one value of one series at one time.
type sample struct {
	series string
	at     time.Time
	value  float64
}

// samples flattens a matrix, vector or scalar into samples.
func (r *promResponse) samples() ([]sample, error) {
	var out []sample
	switch r.Data.ResultType {
	case "matrix", "vector":
		var ss []series
		if err := json.Unmarshal(r.Data.Result, &ss); err != nil {
			return nil, fmt.Errorf("error when reading the query's %s: %w", r.Data.ResultType, err)
		}
		for _, s := range ss {
			points := s.Values
			if r.Data.ResultType == "vector" {
				points = [][2]any{s.Value}
			}
			for _, p := range points {
				smp, err := point(p)
				if err != nil {
					return nil, err
				}
				smp.series = seriesName(s.Metric)
				out = append(out, smp)
			}
		}
	case "scalar":
		var p [2]any
		if err := json.Unmarshal(r.Data.Result, &p); err != nil {
			return nil, fmt.Errorf("error when reading the query's scalar: %w", err)
		}
		smp, err := point(p)
		if err != nil {
			return nil, err
		}
		out = append(out, smp)
	default:
		return nil, fmt.Errorf("the query gives a %s, not numbers: a gate compares numbers", r.Data.ResultType)
	}
	return out, nil
}

// point reads [unix seconds, "value"].
func point(p [2]any) (sample, error) {
	ts, ok := p[0].(float64)
	str, ok2 := p[1].(string)
	if !ok || !ok2 {
		return sample{}, fmt.Errorf("unexpected sample %v", p)
	}
	val, err := strconv.ParseFloat(str, 64)
	if err != nil {
		return sample{}, fmt.Errorf("unexpected sample value %q", str)
	}
	sec, frac := math.Modf(ts)
	return sample{at: time.Unix(int64(sec), int64(frac*1e9)).UTC(), value: val}, nil
}

// judge passes the gate when every sample holds; the verdict's value is
// the first that did not, else the worst (the closest to the threshold).
func judge(spec Spec, samples []sample, v *Verdict) {
	if len(samples) == 0 {
		v.Reason, v.Detail = ReasonNoData, fmt.Sprintf("query %q matched no series between %s and %s (a gate that sees nothing fails)", spec.Query, v.From.Format(time.RFC3339), v.To.Format(time.RFC3339))
		return
	}
	worst := samples[0]
	for _, s := range samples {
		if !spec.Op.Holds(s.value, spec.Threshold) {
			v.Reason, v.Value, v.At = ReasonThreshold, formatValue(s), &s.at
			v.Detail = fmt.Sprintf("%d samples in the window", len(samples))
			return
		}
		if math.Abs(s.value-spec.Threshold) < math.Abs(worst.value-spec.Threshold) {
			worst = s
		}
	}
	v.Pass, v.Value, v.At = true, formatValue(worst), &worst.at
	v.Detail = fmt.Sprintf("%d samples in the window", len(samples))
}

func formatValue(s sample) string {
	val := strconv.FormatFloat(s.value, 'g', 6, 64)
	if s.series != "" && s.series != "{}" {
		return val + " " + s.series
	}
	return val
}

// seriesName is the series' labels, sorted as Prometheus prints them.
func seriesName(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + strconv.Quote(m[k])
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func promTime(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64)
}
