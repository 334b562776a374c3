package awsfake

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

const (
	elbVersion = "2012-06-01"
	elbNS      = "http://elasticloadbalancing.amazonaws.com/doc/2012-06-01/"
)

// elb answers the Classic Load Balancer calls the provider makes.
func (s *Server) elb(action string, f form) ([]*node, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.syncLBLocked()
	name := f.get("LoadBalancerName")
	c := s.lb.classic[name]
	if c == nil {
		return nil, &apiError{status: http.StatusBadRequest, code: "LoadBalancerNotFound", message: fmt.Sprintf("There is no ACTIVE Load Balancer named '%s'", name)}
	}
	now := time.Now()
	switch action {
	case "DescribeLoadBalancerAttributes":
		return []*node{el("LoadBalancerAttributes",
			el("ConnectionDraining", boolean("Enabled", c.draining), num("Timeout", int32(c.timeout/time.Second))),
			el("CrossZoneLoadBalancing", boolean("Enabled", true)),
		)}, nil
	case "DescribeInstanceHealth":
		var ids []string
		for i := 1; f.has("Instances.member." + strconv.Itoa(i) + ".InstanceId"); i++ {
			ids = append(ids, f.get("Instances.member."+strconv.Itoa(i)+".InstanceId"))
		}
		asked := len(ids) > 0
		if !asked {
			ids = sortedKeys(c.members)
		}
		var items []*node
		for _, id := range ids {
			r := c.members[id]
			switch {
			case r != nil && r.deregistered.IsZero():
				items = append(items, instanceHealth(id, "InService", "N/A", "N/A"))
			case r != nil && r.held(now, c.delay()):
				items = append(items, instanceHealth(id, "InService", "N/A", "Instance deregistration currently in progress."))
			case asked:
				items = append(items, instanceHealth(id, "OutOfService", "Instance", "Instance is not currently registered with the LoadBalancer."))
			}
		}
		return []*node{el("InstanceStates", items...)}, nil
	case "DeregisterInstancesFromLoadBalancer":
		for i := 1; f.has("Instances.member." + strconv.Itoa(i) + ".InstanceId"); i++ {
			id := f.get("Instances.member." + strconv.Itoa(i) + ".InstanceId")
			r := c.members[id]
			if r == nil || !r.held(now, c.delay()) {
				return nil, &apiError{status: http.StatusBadRequest, code: "InvalidInstance", message: fmt.Sprintf("The requested instance %s is not registered with the load balancer %s", id, name)}
			}
			if r.deregistered.IsZero() {
				r.deregistered = now
			}
		}
		var left []*node
		for _, id := range sortedKeys(c.members) {
			if c.members[id].deregistered.IsZero() {
				left = append(left, el("member", txt("InstanceId", id)))
			}
		}
		s.notify()
		return []*node{el("Instances", left...)}, nil
	}
	return nil, &apiError{status: http.StatusBadRequest, code: "InvalidAction", message: fmt.Sprintf("The action %s is not valid for this web service.", action)}
}

func instanceHealth(id, state, reason, desc string) *node {
	return el("member", txt("InstanceId", id), txt("State", state), txt("ReasonCode", reason), txt("Description", desc))
}
