package awsfake

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
)

const (
	autoScalingVersion = "2011-01-01"
	ec2Version         = "2016-11-15"
	autoScalingNS      = "http://autoscaling.amazonaws.com/doc/2011-01-01/"
	ec2NS              = "http://ec2.amazonaws.com/doc/2016-11-15/"
)

var requestSeq atomic.Int64

func requestID() string {
	n := requestSeq.Add(1)
	return fmt.Sprintf("00000000-0000-4000-8000-%012x", n)
}

// apiError is an error answered in the service's own error shape.
type apiError struct {
	status        int
	code, message string
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

func validation(format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, code: "ValidationError", message: fmt.Sprintf(format, args...)}
}

func ec2Err(code, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, code: code, message: fmt.Sprintf(format, args...)}
}

// ServeHTTP answers every service on one URL; the query-protocol ones
// are told apart by the Version parameter every request carries.
// Signatures are not checked: any SigV4 credentials are accepted.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.injectFault(w, r, s.serve) {
		return
	}
	if d := s.slowNow(r); d > 0 {
		s.serveSlowly(w, r, d)
		return
	}
	s.serve(w, r)
}

// serve answers a request that no fault stopped: a call the caller may
// not make is refused (iam.go) before it is carried out.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if s.refuseDenied(w, r) {
		return
	}
	// EKS (REST-JSON) and SSM (JSON 1.1) are told apart by path and
	// target header; the rest is the query protocol.
	if s.serveEKS(w, r) || s.serveSSM(w, r) || s.serveQuotas(w, r) {
		return
	}
	if r.Method != http.MethodPost {
		http.Error(w, "only POST is supported", http.StatusMethodNotAllowed)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f := form(r.PostForm)
	action := f.get("Action")
	rid := requestID()
	switch f.get("Version") {
	case autoScalingVersion:
		res, err := modelFirst("autoscaling", autoScalingModel, action, f, refuseValidation, s.autoScaling)
		queryReply(w, autoScalingNS, action, rid, res, err)
	case elbv2Version:
		res, err := modelFirst("elbv2", elbv2Model, action, f, refuseValidation, s.elbv2)
		queryReply(w, elbv2NS, action, rid, res, err)
	case elbVersion:
		res, err := modelFirst("elb", elbModel, action, f, refuseValidation, s.elb)
		queryReply(w, elbNS, action, rid, res, err)
	case stsVersion:
		res, err := modelFirst("sts", nil, action, f, refuseValidation, s.sts)
		queryReply(w, stsNS, action, rid, res, err)
	case iamVersion:
		res, err := modelFirst("iam", nil, action, f, refuseValidation, s.iamCall)
		queryReply(w, iamNS, action, rid, res, err)
	case ec2Version:
		res, err := modelFirst("ec2", ec2Model, action, f, refuseEC2, s.ec2)
		if err != nil {
			ae, ok := err.(*apiError)
			if !ok {
				ae = &apiError{status: 500, code: "InternalError", message: err.Error()}
			}
			reply(w, ae.status, el("Response", el("Errors", el("Error", txt("Code", ae.code), txt("Message", ae.message))), txt("RequestID", rid)))
			return
		}
		root := el(action+"Response", txt("requestId", rid)).add(res...)
		root.attr = ` xmlns="` + ec2NS + `"`
		reply(w, http.StatusOK, root)
	default:
		w.Header().Set("Content-Type", "text/xml")
		reply(w, http.StatusBadRequest, el("ErrorResponse", el("Error", txt("Type", "Sender"), txt("Code", "InvalidAction"),
			txt("Message", fmt.Sprintf("unsupported Version %q for action %q", f.get("Version"), action))), txt("RequestId", rid)))
	}
}

// modelFirst holds a request to botocore's model of its operation
// (model_table.go) and to the rules the documents state besides
// (models, model.go), and only then lets serve answer it.
func modelFirst(service string, models map[string]opModel, action string, f form, refuse func(member, value, msg string) error,
	serve func(action string, f form) ([]*node, error)) ([]*node, error) {
	if vs := checkTable(service, action, f); len(vs) > 0 {
		return nil, refuseTable(service, vs)
	}
	if err := checkModel(models, action, f, refuse); err != nil {
		return nil, err
	}
	return serve(action, f)
}

// queryReply answers in the query protocol of Auto Scaling and Elastic Load
// Balancing: the result in ActionResponse/ActionResult, or an
// ErrorResponse.
func queryReply(w http.ResponseWriter, ns, action, rid string, res []*node, err error) {
	if err != nil {
		ae, ok := err.(*apiError)
		if !ok {
			ae = &apiError{status: 500, code: "InternalFailure", message: err.Error()}
		}
		typ := "Sender"
		if ae.status >= 500 {
			typ = "Receiver"
		}
		body := el("ErrorResponse", el("Error", txt("Type", typ), txt("Code", ae.code), txt("Message", ae.message)), txt("RequestId", rid))
		body.attr = ` xmlns="` + ns + `"`
		reply(w, ae.status, body)
		return
	}
	root := el(action + "Response")
	root.attr = ` xmlns="` + ns + `"`
	if res != nil {
		root.add(el(action+"Result", res...))
	}
	root.add(el("ResponseMetadata", txt("RequestId", rid)))
	reply(w, http.StatusOK, root)
}

func reply(w http.ResponseWriter, status int, body *node) {
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.WriteHeader(status)
	_, _ = w.Write(render(body))
}

type form url.Values

func (f form) get(k string) string { return url.Values(f).Get(k) }

func (f form) has(k string) bool { _, ok := f[k]; return ok }

// hasPrefix reports whether any parameter starts with p, e.g. a member of
// a structure ("LaunchTemplate.").
func (f form) hasPrefix(p string) bool {
	for k := range f {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// list reads prefix.1, prefix.2, ... (EC2) or prefix.member.1, ... (Auto
// Scaling: pass "Name.member").
func (f form) list(prefix string) []string {
	var out []string
	for i := 1; ; i++ {
		k := prefix + "." + strconv.Itoa(i)
		if !f.has(k) {
			return out
		}
		out = append(out, f.get(k))
	}
}

func (f form) int32(k string) (int32, bool, error) {
	if !f.has(k) {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(f.get(k), 10, 32)
	if err != nil {
		return 0, false, validation("%s: invalid integer %q", k, f.get(k))
	}
	return int32(n), true, nil
}

func (f form) boolean(k string) bool { return strings.EqualFold(f.get(k), "true") }
