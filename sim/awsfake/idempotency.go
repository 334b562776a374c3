package awsfake

// A mutating call repeated with the idempotency token of one the service
// carried out is answered as the first was, and changes nothing more:
// EC2 API Reference, "Ensuring idempotency" ("If you retry a request that
// completed successfully using the same client token, the result is the
// same"; CreateLaunchTemplateVersion's ClientToken); EKS API Reference,
// clientRequestToken of CreateNodegroup, UpdateNodegroupVersion and
// UpdateNodegroupConfig ("A unique, case-sensitive identifier that you
// provide to ensure the idempotency of the request"). The SDK fills the
// token in and keeps it across its retries, so a retry after a lost
// answer (Options.LostReplies) finds the first call's result.

// remembered is the answer of the call op made with token, if any; an
// empty token is none.
func (s *Server) remembered(op, token string) (any, bool) {
	if token == "" {
		return nil, false
	}
	res, ok := s.tokenAnswers[op+"\x00"+token]
	return res, ok
}

// remember keeps the answer of the call op made with token.
func (s *Server) remember(op, token string, res any) {
	if token == "" {
		return
	}
	if s.tokenAnswers == nil {
		s.tokenAnswers = map[string]any{}
	}
	s.tokenAnswers[op+"\x00"+token] = res
}
