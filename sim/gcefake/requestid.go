package gcefake

import (
	"regexp"
)

// uuidPattern is what requestId takes: "The request ID must be a valid
// UUID with the exception that zero UUID is not supported
// (00000000-0000-0000-0000-000000000000)" (compute-api.json, requestId of
// every method that changes something).
var uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

const zeroUUID = "00000000-0000-0000-0000-000000000000"

// once runs handle for a call, but a call whose requestId was done
// already gets that call's answer and does nothing: "if you must retry
// your request, the server will know to ignore the request if it has
// already been completed" (compute-api.json, requestId). A call that
// failed was not done, and may be sent again.
func (s *Server) once(req *request, handle handler) (any, error) {
	id := req.r.URL.Query().Get("requestId")
	if id == "" {
		return handle(req)
	}
	if !uuidPattern.MatchString(id) || id == zeroUUID {
		return nil, invalid("Invalid value for field 'requestId': '%s'. The request ID must be a valid UUID with the exception that zero UUID is not supported.", id)
	}
	key := req.project + "/" + id
	s.mu.Lock()
	out, ok := s.done[key]
	s.mu.Unlock()
	if ok {
		return out, nil
	}
	out, err := handle(req)
	if err == nil {
		s.mu.Lock()
		s.done[key] = out
		s.mu.Unlock()
	}
	return out, err
}
