package azurefake

import "net/http"

// An agent pool's eTag: "Unique read-only string used to implement
// optimistic concurrency. The eTag value will change when the resource
// is updated. Specify an if-match or if-none-match header with the eTag
// value for a subsequent request" (armcontainerservice v6
// ManagedClusterAgentPoolProfileProperties.ETag); a write whose If-Match
// ("The request should only proceed if an entity matches this string",
// AgentPoolsClientBeginCreateOrUpdateOptions.IfMatch) names another is
// refused with 412 PreconditionFailed, as ARM's RPC prescribes for a
// failed precondition
// (https://github.com/Azure/azure-resource-manager-rpc/blob/master/v1.0/resource-api-reference.md:
// "If-Match ... 412 (Precondition Failed)"). "*" matches any pool.

// ifMatchLocked refuses a write whose If-Match is not p's eTag.
func ifMatchLocked(q *request, p *pool) *armError {
	h := q.r.Header.Get("If-Match")
	if h == "" || h == "*" || h == derefString(p.model.Properties.ETag) {
		return nil
	}
	return errorf(http.StatusPreconditionFailed, "PreconditionFailed", "Operation is not allowed since the If-Match header %q does not match the eTag %q of agent pool %q: it changed since it was read.",
		h, derefString(p.model.Properties.ETag), derefString(p.model.Name))
}

// newETagLocked gives p a new eTag, on a write.
func (s *Server) newETagLocked(p *pool) {
	p.model.Properties.ETag = ptr(s.nextIDLocked("etag-"))
}
