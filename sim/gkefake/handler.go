package gkefake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	container "google.golang.org/api/container/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/discovery"
)

// apiError is an error answered in the JSON shape of Google APIs, with the
// HTTP code of its canonical status
// (https://cloud.google.com/apis/design/errors#handling_errors).
type apiError struct {
	code   int
	status string
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func notFound(format string, args ...any) error {
	return &apiError{http.StatusNotFound, "NOT_FOUND", fmt.Sprintf(format, args...)}
}

func invalidArg(format string, args ...any) error {
	return &apiError{http.StatusBadRequest, "INVALID_ARGUMENT", fmt.Sprintf(format, args...)}
}

func failedPrecondition(format string, args ...any) error {
	return &apiError{http.StatusBadRequest, "FAILED_PRECONDITION", fmt.Sprintf(format, args...)}
}

// aborted is a stale etag's answer (API reference,
// UpdateNodePoolRequest.etag: "If an etag is provided and does not match
// the current etag of the node pool, update will be blocked and an
// ABORTED error will be returned").
func aborted(format string, args ...any) error {
	return &apiError{http.StatusConflict, "ABORTED", fmt.Sprintf(format, args...)}
}

func writeError(w http.ResponseWriter, err error) {
	ae, ok := err.(*apiError)
	if !ok {
		ae = &apiError{http.StatusInternalServerError, "INTERNAL", err.Error()}
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(ae.code)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": ae.code, "message": ae.msg, "status": ae.status}})
}

// request is one call: its resource name split into kinds and names
// (projects/P/locations/L/...), and the custom verb after ":".
type request struct {
	r     *http.Request
	parts []string
	verb  string
	// upgrade says an update asked for an upgrade (see Call).
	upgrade bool
}

func (q *request) part(i int) string {
	if i < len(q.parts) {
		return q.parts[i]
	}
	return ""
}

type handler func(*request) (any, error)

// ServeHTTP refuses Options.Faults of the calls, then routes a call by
// its path, as the discovery document of
// container/v1 lays them out (v1/{name=projects/*/locations/*/...}).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.dice.Inject(w, r) {
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1/")
	if !ok {
		writeError(w, notFound("no such path %q", r.URL.Path))
		return
	}
	rest, verb, _ := strings.Cut(rest, ":")
	req := &request{r: r, parts: strings.Split(strings.Trim(rest, "/"), "/"), verb: verb}
	if verb == "testIamPermissions" && len(req.parts) == 2 && req.part(0) == "projects" {
		s.testIamPermissions(w, r)
		return
	}
	method, h := s.route(req)
	if h == nil {
		writeError(w, notFound("no method %s %q", r.Method, r.URL.Path))
		return
	}
	var out any
	err := checkModel(method, req)
	if err == nil {
		err = s.authorize(method, req)
	}
	if err == nil {
		out, err = h(req)
	}
	s.mu.Lock()
	s.calls = append(s.calls, Call{HTTPMethod: r.Method, Method: method, Upgrade: req.upgrade})
	s.mu.Unlock()
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	_ = json.NewEncoder(w).Encode(out)
}

// route picks the API method of a call and its handler.
func (s *Server) route(q *request) (string, handler) {
	if q.part(0) != "projects" || q.part(2) != "locations" {
		return "", nil
	}
	const ns = "container.projects.locations."
	get, n := q.r.Method == http.MethodGet, len(q.parts)
	switch {
	case n == 5 && q.part(4) == "serverConfig" && get:
		return ns + "getServerConfig", s.getServerConfig
	case n == 5 && q.part(4) == "operations" && get:
		return ns + "operations.list", s.listOperations
	case n == 6 && q.part(4) == "operations" && get:
		return ns + "operations.get", s.getOperation
	case n == 6 && q.part(4) == "operations" && q.verb == "cancel":
		return ns + "operations.cancel", s.cancelOperation
	case n == 6 && q.part(4) == "clusters" && get:
		return ns + "clusters.get", s.getCluster
	case n == 7 && q.part(6) == "nodePools" && get:
		return ns + "clusters.nodePools.list", s.listPools
	case n == 8 && q.part(6) == "nodePools":
		return s.routePool(q)
	}
	return "", nil
}

func (s *Server) routePool(q *request) (string, handler) {
	const ns = "container.projects.locations.clusters.nodePools."
	switch {
	case q.verb == "" && q.r.Method == http.MethodGet:
		return ns + "get", s.getPool
	case q.verb == "" && q.r.Method == http.MethodPut:
		return ns + "update", s.updatePool
	case q.verb == "rollback" && q.r.Method == http.MethodPost:
		return ns + "rollback", s.rollbackPool
	case q.verb == "completeUpgrade" && q.r.Method == http.MethodPost:
		return ns + "completeUpgrade", s.completeUpgrade
	}
	return "", nil
}

// containerModel is the container/v1 discovery document every call is
// checked against.
var containerModel = sync.OnceValues(discovery.Container)

// checkModel refuses, as GKE would (400 INVALID_ARGUMENT), a call the
// discovery document refuses (see sim/discovery); the body stays readable.
func checkModel(method string, q *request) error {
	doc, err := containerModel()
	if err != nil {
		return err
	}
	body, err := io.ReadAll(q.r.Body)
	if err != nil {
		return err
	}
	q.r.Body = io.NopCloser(bytes.NewReader(body))
	if err := doc.Check(method, q.r.URL.Query(), body); err != nil {
		return invalidArg("%s", err.Error())
	}
	return nil
}

// decode reads a JSON request body into v.
func decode(q *request, v any) error {
	b, err := io.ReadAll(q.r.Body)
	if err != nil {
		return err
	}
	if len(b) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, v); err != nil {
		return invalidArg("invalid JSON payload: %v", err)
	}
	return nil
}

// clusterLocked finds the cluster the call names.
func (s *Server) clusterLocked(q *request) (*cluster, error) {
	c := s.clusters[q.part(1)+"/"+q.part(3)+"/"+q.part(5)]
	if c == nil {
		return nil, notFound("Not found: projects/%s/locations/%s/clusters/%s.", q.part(1), q.part(3), q.part(5))
	}
	return c, nil
}

// poolLocked finds the node pool the call names.
func (s *Server) poolLocked(q *request) (*pool, error) {
	c, err := s.clusterLocked(q)
	if err != nil {
		return nil, err
	}
	p := c.pools[q.part(7)]
	if p == nil {
		return nil, notFound("Not found: projects/%s/locations/%s/clusters/%s/nodePools/%s.", q.part(1), q.part(3), q.part(5), q.part(7))
	}
	return p, nil
}

// getCluster answers clusters.get with the control plane's version and
// the node pools
// (https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/projects.locations.clusters/get).
func (s *Server) getCluster(q *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.clusterLocked(q)
	if err != nil {
		return nil, err
	}
	out := &container.Cluster{Name: c.name, Location: c.location, CurrentMasterVersion: c.masterVersion, Status: "RUNNING",
		SelfLink: fmt.Sprintf("%sv1/projects/%s/locations/%s/clusters/%s", s.Endpoint, c.project, c.location, c.name)}
	if c.channel != "" {
		out.ReleaseChannel = &container.ReleaseChannel{Channel: c.channel}
	}
	out.IpAllocationPolicy = &container.IPAllocationPolicy{UseIpAliases: true, ClusterIpv4CidrBlock: c.podRange}
	for _, name := range sortedKeys(c.pools) {
		p := c.pools[name]
		out.NodePools = append(out.NodePools, s.view(p))
		out.Locations = append(out.Locations, p.zones...)
	}
	return out, nil
}

// getServerConfig answers the versions the location offers
// (https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/projects.locations/getServerConfig);
// the fake's locations offer those of their clusters.
func (s *Server) getServerConfig(q *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := &container.ServerConfig{ValidImageTypes: validImageTypes, DefaultImageType: validImageTypes[0]}
	for _, c := range s.clusters {
		if c.project == q.part(1) && c.location == q.part(3) {
			out.ValidNodeVersions = append(out.ValidNodeVersions, c.validVersions...)
			out.ValidMasterVersions = append(out.ValidMasterVersions, c.masterVersion)
			if c.channel != "" {
				out.Channels = append(out.Channels, &container.ReleaseChannelConfig{Channel: c.channel, ValidVersions: c.channelVersions})
			}
		}
	}
	return out, nil
}

func (s *Server) getPool(q *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.poolLocked(q)
	if err != nil {
		return nil, err
	}
	return s.view(p), nil
}

func (s *Server) listPools(q *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.clusterLocked(q)
	if err != nil {
		return nil, err
	}
	out := &container.ListNodePoolsResponse{}
	for _, name := range sortedKeys(c.pools) {
		out.NodePools = append(out.NodePools, s.view(c.pools[name]))
	}
	return out, nil
}
