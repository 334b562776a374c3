package gcpclient

import (
	_ "embed"
	"net/http"
	"strings"
	"sync"
)

// computeMethodsTable lists every Compute method that is not a GET, one a
// line: its HTTP method, its path under compute/v1/ (the discovery
// document's flatPath where it has one, so each {name} is one segment),
// and "requestId" where the method takes one, "-" where not. It is made
// from compute-api.json, which ships beside google.golang.org/api's
// compute client, by TestComputeMethodsTable, which fails while the two
// differ (go test ./pkg/cloud/internal/gcpclient -run
// TestComputeMethodsTable -update writes it again).
//
//go:embed compute_methods.txt
var computeMethodsTable string

// computeRoute is one line of computeMethodsTable.
type computeRoute struct {
	method    string
	segments  []string
	requestID bool
}

// computeRoutes are computeMethodsTable's lines, by HTTP method.
var computeRoutes = sync.OnceValue(func() map[string][]computeRoute {
	out := map[string][]computeRoute{}
	for line := range strings.Lines(computeMethodsTable) {
		f := strings.Fields(line)
		if len(f) != 3 || strings.HasPrefix(f[0], "#") {
			continue
		}
		out[f[0]] = append(out[f[0]], computeRoute{method: f[0], segments: strings.Split(f[1], "/"), requestID: f[2] == "requestId"})
	}
	return out
})

// findComputeRoute finds the Compute method of a call: the line of
// computeMethodsTable whose path ends its URL's path (whatever base path
// the endpoint has: /compute/v1/ on Google's), a {name} any one segment,
// the most literal segments winning; ok false for a GET or a call of no
// method the document knows. Every path there starts with a literal
// ("projects", "locations"), so the end of a path matches no shorter
// method by chance.
func findComputeRoute(req *http.Request) (r computeRoute, ok bool) {
	if req.Method == http.MethodGet {
		return r, false
	}
	segs := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	best := -1
	for _, c := range computeRoutes()[req.Method] {
		if len(c.segments) > len(segs) {
			continue
		}
		n := literalMatch(c.segments, segs[len(segs)-len(c.segments):])
		switch {
		case n > best:
			r, best = c, n
		case n == best && c.requestID != r.requestID:
			// Two methods alike: the safe reading, none takes a requestId.
			r.requestID = false
		}
	}
	return r, best >= 0
}

// literalMatch is how many literal segments of the template the path
// matches, -1 if it does not match it.
func literalMatch(template, path []string) int {
	n := 0
	for i, t := range template {
		switch {
		case strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}"):
			if path[i] == "" {
				return -1
			}
		case t == path[i]:
			n++
		default:
			return -1
		}
	}
	return n
}
