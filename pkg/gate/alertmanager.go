package gate

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// amAlert is the part of Alertmanager's gettableAlert the gate reads
// (api/v2/openapi.yaml, GET /alerts).
type amAlert struct {
	Labels map[string]string `json:"labels"`
	Status struct {
		State string `json:"state"`
	} `json:"status"`
}

// alertmanager passes when no alert matching every matcher is active:
// firing and neither silenced nor inhibited (a silence is the operator
// saying the alert does not hold the run).
func (e Evaluator) alertmanager(ctx context.Context, spec Spec, v *Verdict) {
	u, err := url.Parse(strings.TrimSuffix(e.AlertmanagerURL, "/"))
	if err != nil || u.Host == "" {
		v.Reason, v.Detail = ReasonUnreachable, fmt.Sprintf("invalid --alertmanager-url %q", e.AlertmanagerURL)
		return
	}
	u.Path += "/api/v2/alerts"
	q := url.Values{"active": {"true"}, "silenced": {"false"}, "inhibited": {"false"}, "unprocessed": {"true"}}
	for _, m := range spec.Matchers {
		q.Add("filter", m.String())
	}
	u.RawQuery = q.Encode()
	alerts, reason, err := e.getAlerts(ctx, u.String())
	if err != nil {
		v.Reason, v.Detail = reason, err.Error()
		return
	}
	var names []string
	for _, a := range alerts {
		name := a.Labels["alertname"]
		if name == "" {
			name = "(no alertname)"
		}
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		v.Pass, v.Value = true, ""
		return
	}
	v.Reason, v.Value = ReasonFiring, strings.Join(names, ", ")
	v.Detail = fmt.Sprintf("%d alerts active", len(alerts))
}

func (e Evaluator) getAlerts(ctx context.Context, endpoint string) ([]amAlert, Reason, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return nil, ReasonUnreachable, err
	}
	res, err := e.client().Do(req)
	if err != nil {
		return nil, ReasonUnreachable, fmt.Errorf("error when asking Alertmanager at %s (check --alertmanager-url): %w", e.AlertmanagerURL, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 32<<20))
	if err != nil {
		return nil, ReasonUnreachable, fmt.Errorf("error when reading Alertmanager's answer from %s: %w", e.AlertmanagerURL, err)
	}
	if res.StatusCode != http.StatusOK {
		return nil, ReasonQueryError, fmt.Errorf("error when asking Alertmanager at %s: it answered %s: %.200s", e.AlertmanagerURL, res.Status, strings.TrimSpace(string(body)))
	}
	var alerts []amAlert
	if err := json.Unmarshal(body, &alerts); err != nil {
		return nil, ReasonQueryError, fmt.Errorf("not an Alertmanager API answer from %s: %.80q", endpoint, body)
	}
	return alerts, "", nil
}
