package awsfake

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
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

// iamState is the caller's identity and the actions its policies do not
// allow; guarded by Server.mu.
type iamState struct {
	caller string
	denied []string
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

// SetCaller makes sts:GetCallerIdentity answer arn.
func (s *Server) SetCaller(arn string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.iam.caller = arn
}

// refuseDenied answers a call to an action Deny took away with
// AccessDenied in the call's service's shape; it reports whether it did.
func (s *Server) refuseDenied(w http.ResponseWriter, r *http.Request) bool {
	action := actionOf(r)
	s.mu.Lock()
	denied := action != "" && slices.Contains(s.iam.denied, action)
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

// iamCall answers SimulatePrincipalPolicy for the role or user the caller
// is: "allowed" for every action but those Deny took away
// (implicitDeny). Rules of api_op_SimulatePrincipalPolicy.go and the IAM
// API Reference: PolicySourceArn 20–2048 characters, ActionNames each
// 3–128, MaxItems 1–1000; NoSuchEntity (404) for an entity that does not
// exist. An assumed role's ARN is not a principal IAM simulates for.
func (s *Server) iamCall(action string, f form) ([]*node, error) {
	if action != "SimulatePrincipalPolicy" {
		return nil, &apiError{status: http.StatusBadRequest, code: "InvalidAction", message: fmt.Sprintf("action %q is not served", action)}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	src := f.get("PolicySourceArn")
	if len(src) < 20 || len(src) > 2048 {
		return nil, validation("1 validation error detected: Value at 'policySourceArn' failed to satisfy constraint: Member must have length between 20 and 2048")
	}
	if src != principalOf(s.callerARN()) {
		return nil, &apiError{status: http.StatusNotFound, code: "NoSuchEntity", message: fmt.Sprintf("The entity %s cannot be found", src)}
	}
	if m := f.get("MaxItems"); m != "" {
		if n, err := strconv.Atoi(m); err != nil || n < 1 || n > 1000 {
			return nil, validation("1 validation error detected: Value at 'maxItems' failed to satisfy constraint: Member must have value between 1 and 1000")
		}
	}
	var results []*node
	for i := 1; f.get(fmt.Sprintf("ActionNames.member.%d", i)) != ""; i++ {
		a := f.get(fmt.Sprintf("ActionNames.member.%d", i))
		if len(a) < 3 || len(a) > 128 {
			return nil, validation("1 validation error detected: Value at 'actionNames' failed to satisfy constraint: Member must have length between 3 and 128")
		}
		decision := "allowed"
		if slices.Contains(s.iam.denied, a) {
			decision = "implicitDeny"
		}
		results = append(results, el("member", txt("EvalActionName", a), txt("EvalResourceName", "*"), txt("EvalDecision", decision)))
	}
	if len(results) == 0 {
		return nil, validation("1 validation error detected: Value null at 'actionNames' failed to satisfy constraint: Member must not be null")
	}
	return []*node{el("EvaluationResults", results...), boolean("IsTruncated", false)}, nil
}

// principalOf is the IAM entity behind a caller's ARN: an assumed role's
// session is its role's.
func principalOf(caller string) string {
	rest, ok := strings.CutPrefix(caller, "arn:aws:sts::")
	if !ok {
		return caller
	}
	account, res, _ := strings.Cut(rest, ":")
	role, ok := strings.CutPrefix(res, "assumed-role/")
	if !ok {
		return caller
	}
	role, _, _ = strings.Cut(role, "/")
	return "arn:aws:iam::" + account + ":role/" + role
}
