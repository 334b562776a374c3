package awsfake

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// The identity services the provider's permission probe asks (query
// protocol, told apart by Version like the others).
const (
	stsVersion = "2011-06-15"
	stsNS      = "https://sts.amazonaws.com/doc/2011-06-15/"
	iamVersion = "2010-05-08"
	iamNS      = "https://iam.amazonaws.com/doc/2010-05-08/"
)

// DefaultCaller is who the fake's callers are unless SetCaller says
// otherwise: a role's session, as with SSO, IRSA or an instance profile.
const DefaultCaller = "arn:aws:sts::123456789012:assumed-role/nodeupgrade/session"

// iamState is the caller's identity, the roles of the account, the
// caller's policies and the actions Deny took away; guarded by Server.mu.
type iamState struct {
	caller string
	denied []string
	// roles are role ARNs with their paths (AddRole): an assumed role's
	// session is one of them by name, else a role at "/".
	roles []string
	// policies are the caller's identity-based policies (SetPolicy); none
	// allows every action.
	policies []*Policy
}

// Deny takes the actions (service:Action) away from the caller: IAM's
// simulation says implicitDeny for them, and the calls themselves are
// refused with AccessDenied, as AWS does for an action no policy allows.
// iam:SimulatePrincipalPolicy among them stops the simulation.
func (s *Server) Deny(actions ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.iam.denied = append(s.iam.denied, actions...)
}

// SetPolicy makes docs the caller's identity-based policies: the
// simulation evaluates them (iampolicy.go), and the calls whose resource
// the fake names (authorisedOn) are refused where they deny.
func (s *Server) SetPolicy(docs ...string) error {
	var ps []*Policy
	for _, d := range docs {
		p, err := ParsePolicy(d)
		if err != nil {
			return err
		}
		ps = append(ps, p)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.iam.policies = ps
	return nil
}

// AddRole makes the role at arn (arn:aws:iam::ACCOUNT:role/PATH/NAME)
// one of the account's: GetRole answers it with its path, and a session
// of it (assumed-role/NAME/...) is simulated as it, as for IAM Identity
// Center's roles under /aws-reserved/sso.amazonaws.com/.
func (s *Server) AddRole(arn string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.iam.roles = append(s.iam.roles, arn)
}

// SetCaller makes sts:GetCallerIdentity answer arn.
func (s *Server) SetCaller(arn string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.iam.caller = arn
}

// refuseDenied answers a call the caller may not make with AccessDenied
// in the call's service's shape; it reports whether it did. An action
// Deny took away is refused; under SetPolicy's policies, so is one they
// do not allow on the resource authorisedOn names (a call whose resource
// the fake does not name is judged by Deny alone).
func (s *Server) refuseDenied(w http.ResponseWriter, r *http.Request) bool {
	action := actionOf(r)
	s.mu.Lock()
	denied := action != "" && slices.Contains(s.iam.denied, action)
	if !denied && action != "" && s.iam.policies != nil {
		if req, ok := s.authorisedOn(action, r); ok {
			d, _ := Evaluate(s.iam.policies, req)
			denied = d != Allowed
		}
	}
	caller := s.callerARN()
	s.mu.Unlock()
	if !denied {
		return false
	}
	msg := fmt.Sprintf("User: %s is not authorized to perform: %s", caller, action)
	switch {
	case strings.HasPrefix(action, "eks:"):
		writeJSON(w, nil, &apiError{status: http.StatusForbidden, code: "AccessDeniedException", message: msg})
	case strings.HasPrefix(action, "ec2:"):
		reply(w, http.StatusForbidden, el("Response", el("Errors", el("Error", txt("Code", "UnauthorizedOperation"), txt("Message", msg))), txt("RequestID", requestID())))
	default:
		queryReply(w, "", "", requestID(), nil, &apiError{status: http.StatusForbidden, code: "AccessDenied", message: msg})
	}
	return true
}

// actionOf is the IAM action of a request: service:Action for the query
// protocols, and the EKS action of a REST route.
func actionOf(r *http.Request) string {
	if strings.HasPrefix(r.URL.Path, "/clusters") {
		return eksAction(r.Method, strings.Split(strings.Trim(r.URL.Path, "/"), "/"))
	}
	if t, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), "AmazonSSM."); ok {
		return "ssm:" + t
	}
	if r.Method != http.MethodPost || r.ParseForm() != nil {
		return ""
	}
	prefix := map[string]string{autoScalingVersion: "autoscaling:", ec2Version: "ec2:", elbv2Version: "elasticloadbalancing:",
		elbVersion: "elasticloadbalancing:", stsVersion: "sts:", iamVersion: "iam:"}[r.PostForm.Get("Version")]
	if prefix == "" {
		return ""
	}
	return prefix + r.PostForm.Get("Action")
}

// eksAction maps EKS's REST routes (the service's API Reference, each
// operation's "Request Syntax") to their IAM actions.
func eksAction(method string, parts []string) string {
	switch n := len(parts); {
	case n == 2 && method == http.MethodGet:
		return "eks:DescribeCluster"
	case n == 3 && parts[2] == "node-groups":
		return map[string]string{http.MethodGet: "eks:ListNodegroups", http.MethodPost: "eks:CreateNodegroup"}[method]
	case n == 3 && parts[2] == "updates":
		return "eks:ListUpdates"
	case n == 4 && parts[2] == "node-groups":
		return map[string]string{http.MethodGet: "eks:DescribeNodegroup", http.MethodDelete: "eks:DeleteNodegroup"}[method]
	case n == 4 && parts[2] == "updates":
		return "eks:DescribeUpdate"
	case n == 5 && parts[4] == "update-config":
		return "eks:UpdateNodegroupConfig"
	case n == 5 && parts[4] == "update-version":
		return "eks:UpdateNodegroupVersion"
	}
	return ""
}

func (s *Server) callerARN() string {
	if s.iam.caller != "" {
		return s.iam.caller
	}
	return DefaultCaller
}

// sts answers GetCallerIdentity (STS API Reference: Arn, UserId, Account;
// it "requires no permissions").
func (s *Server) sts(action string, _ form) ([]*node, error) {
	if action != "GetCallerIdentity" {
		return nil, &apiError{status: http.StatusBadRequest, code: "InvalidAction", message: fmt.Sprintf("action %q is not served", action)}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return []*node{txt("Arn", s.callerARN()), txt("UserId", "AROAEXAMPLE:session"), txt("Account", "123456789012")}, nil
}

// iamCall answers SimulatePrincipalPolicy and GetRole (iamsim.go).
func (s *Server) iamCall(action string, f form) ([]*node, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch action {
	case "SimulatePrincipalPolicy":
		return s.simulatePrincipalPolicy(f)
	case "GetRole":
		return s.getRole(f)
	}
	return nil, &apiError{status: http.StatusBadRequest, code: "InvalidAction", message: fmt.Sprintf("action %q is not served", action)}
}
