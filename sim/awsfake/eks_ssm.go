package awsfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
)

// ssmRelease matches the public SSM parameters AWS publishes the
// recommended EKS AMI release under (User Guide, retrieve-ami-id and
// retrieve-ami-id-bottlerocket): the Amazon Linux ones' release_version
// and Bottlerocket's image_version. The fake publishes one catalogue per
// Kubernetes version (AddRelease) under every AMI family.
var ssmRelease = regexp.MustCompile(`^/aws/service/(?:eks/optimized-ami/([0-9]+\.[0-9]+)/.+/recommended/release_version|bottlerocket/aws-k8s-([0-9]+\.[0-9]+)[^/]*/[^/]+/latest/image_version)$`)

// serveSSM answers SSM's GetParameter in the JSON 1.1 protocol (target
// AmazonSSM.GetParameter); it reports false for other requests.
func (s *Server) serveSSM(w http.ResponseWriter, r *http.Request) bool {
	target := r.Header.Get("X-Amz-Target")
	if !strings.HasPrefix(target, "AmazonSSM.") {
		return false
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	res, err := s.ssmCall(target, r)
	if err != nil {
		ae := err.(*apiError)
		w.Header().Set("X-Amzn-ErrorType", ae.code)
		w.WriteHeader(ae.status)
		_ = json.NewEncoder(w).Encode(map[string]string{"__type": ae.code, "message": ae.message})
		return true
	}
	_ = json.NewEncoder(w).Encode(res)
	return true
}

func (s *Server) ssmCall(target string, r *http.Request) (any, error) {
	if target != "AmazonSSM.GetParameter" {
		return nil, &apiError{status: http.StatusBadRequest, code: "UnknownOperationException", message: target}
	}
	if err := checkJSON("ssm", "GetParameter", r); err != nil {
		return nil, err
	}
	var req struct{ Name string }
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return nil, &apiError{status: http.StatusBadRequest, code: "ValidationException", message: err.Error()}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.eks().calls = append(s.eks().calls, "SSM GetParameter "+req.Name)
	m := ssmRelease.FindStringSubmatch(req.Name)
	var rels []Release
	if m != nil {
		rels = s.eks().releases[m[1]+m[2]]
	}
	if len(rels) == 0 {
		// SSM's ParameterNotFound carries no message.
		return nil, &apiError{status: http.StatusBadRequest, code: "ParameterNotFound", message: ""}
	}
	last := rels[len(rels)-1]
	return map[string]any{"Parameter": map[string]any{
		"Name": req.Name, "Type": "String", "Value": last.ReleaseVersion, "Version": len(rels),
		"DataType": "text", "ARN": fmt.Sprintf("arn:aws:ssm:%s::parameter%s", s.opts.Region, req.Name),
	}}, nil
}
