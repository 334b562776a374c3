package discovery

import (
	"errors"
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

// TestComputeRequests: the compute/v1 document, found in the module
// cache, refuses what its schemas refuse, and takes what the Go client
// sends for a valid call.
func TestComputeRequests(t *testing.T) {
	d, err := Compute()
	if err != nil {
		t.Fatal(err)
	}
	const insert, resize = "compute.instanceGroupManagers.insert", "compute.instanceGroupManagers.resize"
	long := "a" + strings.Repeat("b", 57) // 58: the most baseInstanceName takes
	for _, tc := range []struct {
		name, method string
		query        url.Values
		body         string
		reason, err  string
	}{
		{name: "an insert", method: insert, body: `{"name":"ng-green","baseInstanceName":"` + long + `","targetSize":0,"instanceTemplate":"t","updatePolicy":{"type":"PROACTIVE"}}`},
		{name: "baseInstanceName of 59", method: insert, body: `{"name":"ng","baseInstanceName":"` + long + `c","targetSize":1}`, reason: "invalid", err: "Invalid value at 'baseInstanceName'"},
		{name: "a numbered baseInstanceName", method: insert, body: `{"name":"ng","baseInstanceName":"vm-###","targetSize":1}`},
		{name: "a name of 64", method: insert, body: `{"name":"` + strings.Repeat("a", 64) + `","targetSize":1}`, reason: "invalid", err: "Invalid value at 'name'"},
		{name: "a name ending in a hyphen", method: insert, body: `{"name":"ng-","targetSize":1}`, reason: "invalid", err: "Invalid value at 'name'"},
		{name: "no targetSize", method: insert, body: `{"name":"ng"}`, reason: "required", err: "Required field 'targetSize' not specified"},
		{name: "no name", method: insert, body: `{"targetSize":1}`, reason: "required", err: "Required field 'name' not specified"},
		{name: "an unknown field", method: insert, body: `{"name":"ng","targetSize":1,"size":1}`, reason: "invalid", err: `Unknown name "size"`},
		{name: "a bad enum", method: insert, body: `{"name":"ng","targetSize":1,"updatePolicy":{"type":"ROLLING"}}`, reason: "invalid", err: "Invalid value at 'updatePolicy.type'"},
		{name: "a resize", method: resize, query: url.Values{"size": {"3"}, "requestId": {"x"}, "alt": {"json"}}},
		{name: "a resize without its size", method: resize, query: url.Values{"alt": {"json"}}, reason: "required", err: `Required query parameter "size"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := d.Check(tc.method, tc.query, []byte(tc.body))
			var e *Error
			if tc.err == "" && err != nil || tc.err != "" && (!errors.As(err, &e) || e.Reason != tc.reason || !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("Check = %v, want %s %q", err, tc.reason, tc.err)
			}
		})
	}
	for _, tc := range []struct{ path, err string }{
		{path: "projects/p/zones/us-central1-a/instanceGroupManagers/ng/resize"},
		{path: "projects/Bad_Project/zones/us-central1-a/instanceGroupManagers/ng/resize", err: "Invalid value at 'project'"},
		{path: "projects/p/zones/us-central1-a/instanceGroupManagers/resize", err: "is not of method"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			err := d.CheckPath(resize, tc.path)
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("CheckPath = %v, want %q", err, tc.err)
			}
		})
	}
}
