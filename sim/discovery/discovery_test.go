package discovery

import (
	"net/url"
	"strings"
	"testing"
)

func TestContainerRequests(t *testing.T) {
	d, err := Container()
	if err != nil {
		t.Fatal(err)
	}
	const update = "container.projects.locations.clusters.nodePools.update"
	for _, tc := range []struct {
		name, method string
		query        url.Values
		body         string
		err          string
	}{
		{name: "an upgrade", method: update, body: `{"nodeVersion":"1.31","etag":"e"}`},
		{name: "settings, a null clearing a field", method: update, body: `{"upgradeSettings":{"strategy":"SURGE","maxSurge":1,"maxUnavailable":0},"nodeDrainConfig":{"pdbTimeoutDuration":null,"respectPdbDuringNodePoolDeletion":false}}`},
		{name: "an unknown field", method: update, body: `{"nodeVersion":"1.31","version":"x"}`, err: `Unknown name "version"`},
		{name: "an unknown nested field", method: update, body: `{"nodeDrainConfig":{"pdbTimeout":"10s"}}`, err: `Unknown name "pdbTimeout" at 'nodeDrainConfig'`},
		{name: "an enum", method: update, body: `{"upgradeSettings":{"strategy":"ROLLING"}}`, err: "Invalid value at 'upgradeSettings.strategy'"},
		{name: "a type", method: update, body: `{"upgradeSettings":{"maxSurge":"many"}}`, err: "want a number"},
		{name: "an int64 as a string", method: update, body: `{"upgradeSettings":{"blueGreenSettings":{"standardRolloutPolicy":{"batchNodeCount":1}}}}`},
		{name: "a global query parameter", method: "container.projects.locations.operations.get", query: url.Values{"alt": {"json"}, "prettyPrint": {"false"}}},
		{name: "an unknown query parameter", method: "container.projects.locations.operations.get", query: url.Values{"operation": {"x"}}, err: `Unknown name "operation"`},
		{name: "a query enum", method: "container.projects.locations.operations.get", query: url.Values{"alt": {"xml"}}, err: "Invalid value at 'alt'"},
		{name: "an unknown method", method: "container.nope", err: "not in the container discovery document"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := d.Check(tc.method, tc.query, []byte(tc.body))
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("Check = %v, want %q", err, tc.err)
			}
		})
	}
}
