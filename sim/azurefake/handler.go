package azurefake

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	armcs "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"
)

// armError is an ARM error answer: its HTTP status and the body's
// error.code and error.message
// (https://github.com/Azure/azure-resource-manager-rpc/blob/master/v1.0/common-api-details.md#error-response-content).
type armError struct {
	status        int
	code, message string
}

func (e *armError) Error() string { return e.code + ": " + e.message }

func errorf(status int, code, format string, args ...any) *armError {
	return &armError{status: status, code: code, message: fmt.Sprintf(format, args...)}
}

func writeError(w http.ResponseWriter, e *armError) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("x-ms-error-code", e.code)
	w.WriteHeader(e.status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": e.code, "message": e.message}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	if v != nil {
		_ = json.NewEncoder(w).Encode(v)
	}
}

// request is a request split into its path segments (lower case, for
// matching: ARM paths are case-insensitive, and the SDK's abort path
// spells "managedclusters" where the others spell "managedClusters") and
// the original ones (for names).
type request struct {
	r          *http.Request
	w          http.ResponseWriter
	parts, raw []string
	body       []byte
}

// ServeHTTP answers a request: a fault at the dice's rate, else the
// operation it names.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	raw := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	q := &request{r: r, parts: strings.Split(strings.ToLower(strings.Trim(r.URL.Path, "/")), "/"), raw: raw, body: body}
	op, h := s.route(q)
	s.mu.Lock()
	next := s.takeNextLocked(op)
	s.mu.Unlock()
	// Listed once answered (Calls): whoever sees a change listed finds it
	// made, as a caller killed after sending it would on Azure, where a
	// PUT's resource is there by the time it is answered.
	defer func() {
		s.mu.Lock()
		s.calls = append(s.calls, Call{HTTPMethod: r.Method, Operation: op})
		s.mu.Unlock()
	}()
	if !servesVersion(op, r.URL.Query().Get("api-version")) {
		// ARM refuses an API version the resource provider does not serve.
		writeError(w, errorf(http.StatusBadRequest, "NoRegisteredProviderFound", "No registered resource provider found for location '%s' and API version '%s'", s.opts.Location, r.URL.Query().Get("api-version")))
		return
	}
	if h == nil {
		writeError(w, errorf(http.StatusNotFound, "NotFound", "the fake serves no %s %s", r.Method, r.URL.Path))
		return
	}
	if e := s.admit(op, q); e != nil {
		writeError(w, e)
		return
	}
	if next.delay > 0 {
		answerLate(q, w, h, next.delay)
		return
	}
	f := s.dice.roll(r.Method)
	if next.lost {
		f = faultLost
	}
	switch f {
	case faultThrottle:
		w.Header().Set("Retry-After", retryAfterSeconds(s.opts.RetryAfter))
		writeError(w, errorf(http.StatusTooManyRequests, "TooManyRequests", "The request is being throttled."))
		return
	case faultServer:
		writeError(w, errorf(http.StatusInternalServerError, "InternalServerError", "An internal error occurred. Please retry the request."))
		return
	case faultLost:
		// Done, then the answer lost: the caller sees a 500 (or a dropped
		// connection) for a request the service carried out.
		q.w = httptest.NewRecorder()
		h(q)
		writeError(w, errorf(http.StatusInternalServerError, "InternalServerError", "An internal error occurred. Please retry the request."))
		return
	}
	q.w = w
	h(q)
}

// route names the ARM operation of a request and its handler, nil for none.
func (s *Server) route(q *request) (string, func(*request)) {
	p := q.parts
	get := q.r.Method == http.MethodGet
	if op, h := s.accountRoute(q); h != nil {
		return op, h
	}
	if op, h := s.networkRoute(q); h != nil {
		return op, h
	}
	switch {
	case isCompute(p):
		return s.routeCompute(q)
	case len(p) == 8 && p[2] == "providers" && p[6] == "operations" && get:
		return "operations/read", s.getOperation
	case len(p) == 8 && p[2] == "providers" && p[6] == "operationresults" && get:
		return "operationresults/read", s.getOperationResult
	case len(p) < 8 || p[2] != "resourcegroups" || p[5] != "microsoft.containerservice" || p[6] != "managedclusters":
		return "unknown", nil
	case len(p) == 8 && get:
		return "managedClusters/read", s.getCluster
	case len(p) == 9 && p[8] == "agentpools" && get:
		return "agentPools/read", s.listPools
	case len(p) == 10 && get:
		return "agentPools/read", s.getPool
	case len(p) == 10 && q.r.Method == http.MethodPut:
		return "agentPools/write", s.writePool
	case len(p) == 10 && q.r.Method == http.MethodDelete:
		return "agentPools/delete", s.deletePool
	case len(p) == 12 && p[10] == "upgradeprofiles" && get:
		return "agentPools/upgradeProfiles/read", s.getUpgradeProfile
	case len(p) == 11 && p[10] == "upgradenodeimageversion" && q.r.Method == http.MethodPost:
		return "agentPools/upgradeNodeImageVersion/action", s.upgradeNodeImage
	case len(p) == 11 && p[10] == "abort" && q.r.Method == http.MethodPost:
		return "agentPools/abort/action", s.abort
	}
	return "unknown", nil
}

// clusterOf is the request's cluster, or the 404 ARM answers.
func (s *Server) clusterOfLocked(q *request) (*cluster, *armError) {
	c := s.clusters[key(q.raw[3], q.raw[7])]
	if c == nil {
		return nil, errorf(http.StatusNotFound, "ResourceNotFound", "The Resource 'Microsoft.ContainerService/managedClusters/%s' under resource group '%s' was not found.", q.raw[7], q.raw[3])
	}
	return c, nil
}

// poolOfLocked is the request's agent pool, or the 404 AKS answers.
func (s *Server) poolOfLocked(q *request) (*pool, *armError) {
	c, err := s.clusterOfLocked(q)
	if err != nil {
		return nil, err
	}
	p := c.pools[strings.ToLower(q.raw[9])]
	if p == nil {
		return nil, errorf(http.StatusNotFound, "NotFound", "Agent Pool '%s' not found in managed cluster '%s'.", q.raw[9], c.name)
	}
	return p, nil
}

func (s *Server) getCluster(q *request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.clusterOfLocked(q)
	if err != nil {
		writeError(q.w, err)
		return
	}
	mc := armcs.ManagedCluster{ID: ptr(s.clusterID(c)), Name: ptr(c.name), Location: ptr(s.opts.Location),
		Properties: &armcs.ManagedClusterProperties{KubernetesVersion: ptr(c.version), CurrentKubernetesVersion: ptr(c.version),
			NodeResourceGroup: ptr(c.nodeGroup), ProvisioningState: ptr(stateSucceeded), NetworkProfile: s.networkProfileLocked(c)}}
	for _, p := range c.pools {
		mc.Properties.AgentPoolProfiles = append(mc.Properties.AgentPoolProfiles, &armcs.ManagedClusterAgentPoolProfile{Name: p.model.Name,
			OrchestratorVersion: p.model.Properties.OrchestratorVersion, NodeImageVersion: p.model.Properties.NodeImageVersion})
	}
	writeJSON(q.w, http.StatusOK, mc)
}

func (s *Server) listPools(q *request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.clusterOfLocked(q)
	if err != nil {
		writeError(q.w, err)
		return
	}
	var out armcs.AgentPoolListResult
	for _, p := range c.pools {
		v := s.poolView(p)
		out.Value = append(out.Value, &v)
	}
	writeJSON(q.w, http.StatusOK, out)
}

func (s *Server) getPool(q *request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.poolOfLocked(q)
	if err != nil {
		writeError(q.w, err)
		return
	}
	writeJSON(q.w, http.StatusOK, s.poolDoc(p, q.r.URL.Query().Get("api-version")))
}

// getUpgradeProfile answers agentPools/{p}/upgradeProfiles/default: the
// pool's version, the versions it may move to (above its own, at most
// the control plane's: "the node pool version must be ... less than or
// equal to the control plane version",
// https://learn.microsoft.com/en-us/azure/aks/upgrade-aks-cluster) and the
// latest node image.
func (s *Server) getUpgradeProfile(q *request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.poolOfLocked(q)
	if err != nil {
		writeError(q.w, err)
		return
	}
	if q.parts[11] != "default" {
		writeError(q.w, errorf(http.StatusNotFound, "NotFound", "upgrade profile %q not found", q.raw[11]))
		return
	}
	cur := *p.model.Properties.CurrentOrchestratorVersion
	props := &armcs.AgentPoolUpgradeProfileProperties{KubernetesVersion: ptr(cur), OSType: ptr(armcs.OSTypeLinux), LatestNodeImageVersion: ptr(p.latest)}
	for _, v := range p.c.versions {
		if compareVersions(v, cur) > 0 && compareVersions(v, p.c.version) <= 0 {
			props.Upgrades = append(props.Upgrades, &armcs.AgentPoolUpgradeProfilePropertiesUpgradesItem{KubernetesVersion: ptr(v), IsPreview: ptr(false)})
		}
	}
	writeJSON(q.w, http.StatusOK, armcs.AgentPoolUpgradeProfile{ID: ptr(*p.model.ID + "/upgradeProfiles/default"), Name: ptr("default"),
		Type: ptr("Microsoft.ContainerService/managedClusters/agentPools/upgradeProfiles"), Properties: props})
}

func ptr[T any](v T) *T { return &v }
