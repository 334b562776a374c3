package awsfake

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

const (
	elbv2Version = "2015-12-01"
	elbv2NS      = "http://elasticloadbalancing.amazonaws.com/doc/2015-12-01/"
)

// elbv2 answers the Elastic Load Balancing v2 calls the provider makes
// about target groups.
func (s *Server) elbv2(action string, f form) ([]*node, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.syncLBLocked()
	tg := s.lb.targetGroups[f.get("TargetGroupArn")]
	if tg == nil {
		switch action {
		case "DescribeTargetHealth", "DeregisterTargets", "DescribeTargetGroupAttributes":
			return nil, &apiError{status: http.StatusBadRequest, code: "TargetGroupNotFound", message: fmt.Sprintf("Target groups '%s' not found", f.get("TargetGroupArn"))}
		}
	}
	now := time.Now()
	switch action {
	case "DescribeTargetGroupAttributes":
		return []*node{el("Attributes",
			el("member", txt("Key", "deregistration_delay.timeout_seconds"), txt("Value", strconv.Itoa(int(tg.delay/time.Second)))),
			el("member", txt("Key", "stickiness.enabled"), txt("Value", "false")),
		)}, nil
	case "DescribeTargetHealth":
		var items []*node
		var ids []string
		for i := 1; f.has("Targets.member." + strconv.Itoa(i) + ".Id"); i++ {
			ids = append(ids, f.get("Targets.member."+strconv.Itoa(i)+".Id"))
		}
		asked := len(ids) > 0
		if !asked {
			ids = sortedKeys(tg.targets)
		}
		for _, id := range ids {
			r := tg.targets[id]
			switch {
			case r != nil && r.deregistered.IsZero():
				items = append(items, targetHealth(id, r.port, "healthy", "", ""))
			case r != nil && r.held(now, tg.delay):
				items = append(items, targetHealth(id, r.port, "draining", "Target.DeregistrationInProgress", "Target deregistration is in progress"))
			case asked:
				// Out, or never in: AWS answers for a target asked about.
				items = append(items, targetHealth(id, tg.port, "unused", "Target.NotRegistered", "Target is not registered to the target group"))
			}
		}
		return []*node{el("TargetHealthDescriptions", items...)}, nil
	case "DeregisterTargets":
		for i := 1; f.has("Targets.member." + strconv.Itoa(i) + ".Id"); i++ {
			id := f.get("Targets.member." + strconv.Itoa(i) + ".Id")
			if s.instances[id] == nil {
				return nil, &apiError{status: http.StatusBadRequest, code: "InvalidTarget", message: fmt.Sprintf("The following targets are not valid instances: '%s'", id)}
			}
			if r := tg.targets[id]; r != nil && r.deregistered.IsZero() {
				r.deregistered = now
			}
		}
		s.notify()
		return []*node{}, nil // an empty DeregisterTargetsResult, which the SDK expects
	}
	return nil, &apiError{status: http.StatusBadRequest, code: "InvalidAction", message: fmt.Sprintf("The action %s is not valid for this web service.", action)}
}

func targetHealth(id string, port int32, state, reason, desc string) *node {
	th := el("TargetHealth", txt("State", state))
	if reason != "" {
		th.add(txt("Reason", reason), txt("Description", desc))
	}
	return el("member", el("Target", txt("Id", id), num("Port", port)), txt("HealthCheckPort", strconv.Itoa(int(port))), th)
}
