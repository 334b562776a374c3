package gcefake

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"google.golang.org/api/googleapi"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/discovery"
)

// apiPrefix is the path of Compute Engine API v1 under its host, as the Go
// client's default endpoint (https://compute.googleapis.com/compute/v1/)
// has it.
const apiPrefix = "/compute/v1/"

// apiError is an error answered with its HTTP code and reason, in the JSON
// error shape the Go client decodes into *googleapi.Error
// (https://cloud.google.com/compute/docs/reference/rest/v1#errors).
type apiError struct {
	code   int
	reason string
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func notFound(format string, args ...any) error {
	return &apiError{http.StatusNotFound, "notFound", fmt.Sprintf(format, args...)}
}

func invalid(format string, args ...any) error {
	return &apiError{http.StatusBadRequest, "invalid", fmt.Sprintf(format, args...)}
}

func conflict(format string, args ...any) error {
	return &apiError{http.StatusConflict, "alreadyExists", fmt.Sprintf(format, args...)}
}

// request is one call, its path split after "projects/".
type request struct {
	r       *http.Request
	project string
	parts   []string // after projects/{project}/
}

// ServeHTTP routes a call by its path, as the discovery document of
// compute/v1 lays the paths out, after the front end's injected faults
// (Options.Faults) and before the handler, the caller's permission.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.dice.Inject(w, r) || s.testServiceAccountIam(w, r) || s.testIamPermissions(w, r) {
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, apiPrefix+"projects/")
	if !ok {
		writeError(w, notFound("no such path %q", r.URL.Path))
		return
	}
	parts := strings.Split(strings.Trim(rest, "/"), "/")
	req := &request{r: r, project: parts[0], parts: parts[1:]}
	method, handle := s.route(req)
	if handle == nil {
		writeError(w, notFound("no method %s %q", r.Method, r.URL.Path))
		return
	}
	s.mu.Lock()
	s.calls = append(s.calls, Call{HTTPMethod: r.Method, Method: method})
	s.mu.Unlock()
	if err := checkModel(method, req); err != nil {
		writeError(w, err)
		return
	}
	if err := s.authorize(method, req); err != nil {
		writeError(w, err)
		return
	}
	out, err := s.once(req, handle)
	if err != nil {
		writeError(w, err)
		return
	}
	if req.r.URL.Query().Get("requestId") != "" && s.late.Inject(w, r) {
		return // done, the answer lost (Options.LateFaults)
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	_ = json.NewEncoder(w).Encode(out)
}

type handler func(*request) (any, error)

// checkModel refuses, as Compute would (400, the reason the model's
// refusal names: "invalid" or "required"), a call compute/v1's discovery
// document refuses: its path parameters, query and body (see
// sim/discovery, which reads the document from the module cache). The
// body stays readable. An operation's wait is routed with its get.
func checkModel(method string, req *request) error {
	doc, err := discovery.Compute()
	if err != nil {
		return err
	}
	if strings.HasSuffix(req.r.URL.Path, "/wait") {
		method = strings.TrimSuffix(method, ".get") + ".wait"
	}
	if err := doc.CheckPath(method, strings.TrimPrefix(req.r.URL.Path, apiPrefix)); err != nil {
		return modelError(err)
	}
	body, err := io.ReadAll(req.r.Body)
	if err != nil {
		return err
	}
	req.r.Body = io.NopCloser(bytes.NewReader(body))
	return modelError(doc.Check(method, req.r.URL.Query(), body))
}

// modelError is the model's refusal as Compute's 400, or err as it is.
func modelError(err error) error {
	var e *discovery.Error
	if errors.As(err, &e) {
		return &apiError{http.StatusBadRequest, e.Reason, e.Message}
	}
	return err
}

// route picks the API method of a call and the handler that answers it.
func (s *Server) route(req *request) (string, handler) {
	p, m := req.parts, req.r.Method
	if len(p) == 0 {
		return "", nil
	}
	switch p[0] {
	case "global":
		return s.routeGlobal(p[1:], m)
	case "zones", "regions":
		if len(p) < 3 {
			if len(p) == 2 && p[0] == "regions" && m == http.MethodGet {
				return "compute.regions.get", s.getRegion
			}
			return "", nil
		}
		return s.routeScoped(p[0], p[1], p[2:], m)
	}
	return "", nil
}

func (s *Server) routeGlobal(p []string, m string) (string, handler) {
	switch {
	case len(p) == 1 && p[0] == "instanceTemplates" && m == http.MethodGet:
		return "compute.instanceTemplates.list", s.listTemplates
	case len(p) == 1 && p[0] == "instanceTemplates" && m == http.MethodPost:
		return "compute.instanceTemplates.insert", s.insertTemplate
	case len(p) == 2 && p[0] == "instanceTemplates" && m == http.MethodGet:
		return "compute.instanceTemplates.get", s.getTemplate
	case len(p) == 2 && p[0] == "images" && m == http.MethodGet:
		return "compute.images.get", s.getImage
	case len(p) == 3 && p[0] == "images" && p[1] == "family" && m == http.MethodGet:
		return "compute.images.getFromFamily", s.getImageFromFamily
	case len(p) >= 2 && p[0] == "operations":
		return "compute.globalOperations.get", s.getOperation
	case len(p) == 3 && p[0] == "instanceTemplates" && p[2] == "testIamPermissions" && m == http.MethodPost:
		return "compute.instanceTemplates.testIamPermissions", s.testResourceIam
	}
	return s.routeBackendServices("global", p, m)
}

// routeScoped routes the calls under zones/{zone} and regions/{region};
// p starts after the scope's name.
func (s *Server) routeScoped(kind, scopeName string, p []string, m string) (string, handler) {
	igm := "compute.instanceGroupManagers."
	ops, as := "compute.zoneOperations.get", "compute.autoscalers."
	if kind == "regions" {
		igm, ops, as = "compute.regionInstanceGroupManagers.", "compute.regionOperations.get", "compute.regionAutoscalers."
	}
	switch {
	case p[0] == "instances" && len(p) == 2 && kind == "zones" && m == http.MethodGet:
		return "compute.instances.get", s.getInstance
	case p[0] == "instances" && len(p) == 1 && kind == "zones" && m == http.MethodGet:
		return "compute.instances.list", s.listInstances
	case p[0] == "machineTypes" && len(p) == 2 && kind == "zones" && m == http.MethodGet:
		return "compute.machineTypes.get", s.getMachineType
	case p[0] == "operations" && len(p) >= 2:
		return ops, s.getOperation
	case p[0] == "autoscalers" && len(p) == 1 && m == http.MethodGet:
		return as + "list", s.listAutoscalers
	case p[0] == "autoscalers" && len(p) == 1 && m == http.MethodPost:
		return as + "insert", s.insertAutoscaler
	case p[0] == "autoscalers" && len(p) == 2 && m == http.MethodGet:
		return as + "get", s.getAutoscaler
	case len(p) == 3 && p[2] == "testIamPermissions" && m == http.MethodPost && (p[0] == "instanceGroups" || p[0] == "subnetworks" && kind == "regions"):
		method := map[string]string{"zones": "compute.instanceGroups", "regions": "compute.regionInstanceGroups"}[kind]
		if p[0] == "subnetworks" {
			method = "compute.subnetworks"
		}
		return method + ".testIamPermissions", s.testResourceIam
	case p[0] == "backendServices" && kind == "regions":
		return s.routeBackendServices("regions/"+scopeName, p, m)
	case p[0] != "instanceGroupManagers":
		return "", nil
	case len(p) == 1 && m == http.MethodGet:
		return igm + "list", s.listGroups
	case len(p) == 1 && m == http.MethodPost:
		return igm + "insert", s.insertGroup
	case len(p) == 2:
		h := map[string]handler{http.MethodGet: s.getGroup, http.MethodDelete: s.deleteGroup, http.MethodPatch: s.patchGroup}[m]
		name := map[string]string{http.MethodGet: "get", http.MethodDelete: "delete", http.MethodPatch: "patch"}[m]
		return igm + name, h
	case len(p) == 3 && m == http.MethodPost:
		h := map[string]handler{
			"resize": s.resizeGroup, "setInstanceTemplate": s.setGroupTemplate, "deleteInstances": s.deleteInstances,
			"recreateInstances": s.recreateInstances, "listManagedInstances": s.listManagedInstances,
		}[p[2]]
		return igm + p[2], h
	}
	return "", nil
}

func writeError(w http.ResponseWriter, err error) {
	ae, ok := err.(*apiError)
	if !ok {
		ae = &apiError{http.StatusInternalServerError, "backendError", err.Error()}
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(ae.code)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": googleapi.Error{
		Code: ae.code, Message: ae.msg,
		Errors: []googleapi.ErrorItem{{Reason: ae.reason, Message: ae.msg}},
	}})
}

// decode reads a JSON request body into v.
func decode(req *request, v any) error {
	b, err := io.ReadAll(req.r.Body)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return invalid("invalid JSON payload: %v", err)
	}
	return nil
}

// page cuts a list to the call's maxResults (default and most 500) from
// its pageToken, the offset of the first item, as list methods page
// (https://cloud.google.com/compute/docs/reference/rest/v1/instanceGroupManagers/list).
func page[T any](req *request, items []T) ([]T, string, error) {
	q := req.r.URL.Query()
	n := 500
	if v := q.Get("maxResults"); v != "" {
		m, err := strconv.Atoi(v)
		if err != nil || m < 0 {
			return nil, "", invalid("invalid maxResults %q", v)
		}
		n = min(max(m, 1), 500)
	}
	from := 0
	if t := q.Get("pageToken"); t != "" {
		f, err := strconv.Atoi(t)
		if err != nil || f < 0 || f > len(items) {
			return nil, "", invalid("invalid pageToken %q", t)
		}
		from = f
	}
	to := min(from+n, len(items))
	next := ""
	if to < len(items) {
		next = strconv.Itoa(to)
	}
	return items[from:to], next, nil
}
