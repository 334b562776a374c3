package azurefake

// SetPoolState sets an agent pool's provisioningState as if an operation
// the fake does not run (a scale, another client's update) were running
// on it or had ended; it starts and stops nothing. It reports whether the
// pool exists.
func (s *Server) SetPoolState(group, clusterName, name, state string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.poolLocked(group, clusterName, name)
	if p == nil {
		return false
	}
	props := *p.model.Properties
	props.ProvisioningState = &state
	p.model.Properties = &props
	return true
}
