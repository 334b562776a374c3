package azurefake

import (
	"net/http"
	"strings"
	"time"
)

// operation is a long-running operation on an agent pool, as ARM's
// asynchronous operations report it
// (https://learn.microsoft.com/en-us/azure/azure-resource-manager/management/async-operations):
// its status (InProgress, Succeeded, Failed, Canceled), start and end,
// and the error it failed with.
type operation struct {
	id, kind   string
	status     string
	start, end time.Time
	err        *armError
	pool       *pool
	// abort asks the upgrade to stop where it is; cancel ends its
	// context, so that a wait for a node or a drain stops too.
	abort  bool
	cancel func()
	// done is closed when the operation ends.
	done chan struct{}
}

const (
	opInProgress = "InProgress"
	opSucceeded  = "Succeeded"
	opFailed     = "Failed"
	opCanceled   = "Canceled"
)

// startOpLocked makes the pool's operation of kind.
func (s *Server) startOpLocked(p *pool, kind string) *operation {
	o := &operation{id: s.nextIDLocked("op-"), kind: kind, status: opInProgress, start: time.Now().UTC(), pool: p, done: make(chan struct{})}
	s.ops[o.id] = o
	p.op = o
	return o
}

// endOpLocked ends the operation with status (and err for Failed).
func (s *Server) endOpLocked(o *operation, status string, err *armError) {
	if o.status != opInProgress {
		return
	}
	o.status, o.err, o.end = status, err, time.Now().UTC()
	if o.pool.op == o {
		o.pool.op = nil
	}
	close(o.done)
}

// asyncHeaders point the caller at the operation: Azure-AsyncOperation
// (its status) and Location (its result), with Retry-After
// (https://learn.microsoft.com/en-us/azure/azure-resource-manager/management/async-operations#monitor-status-of-operation).
func (s *Server) asyncHeaders(w http.ResponseWriter, o *operation) {
	base := s.URL + "/subscriptions/" + s.opts.Subscription + "/providers/Microsoft.ContainerService/locations/" + s.opts.Location
	w.Header().Set("Azure-AsyncOperation", base+"/operations/"+o.id+"?api-version="+APIVersion)
	w.Header().Set("Location", base+"/operationresults/"+o.id+"?api-version="+APIVersion)
	w.Header().Set("Retry-After", "1")
}

func (s *Server) opOf(q *request) *operation {
	return s.ops[q.raw[7]]
}

// getOperation answers the Azure-AsyncOperation URL: the operation's
// status document.
func (s *Server) getOperation(q *request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.opOf(q)
	if o == nil || !strings.EqualFold(q.raw[1], s.opts.Subscription) {
		writeError(q.w, errorf(http.StatusNotFound, "NotFound", "operation %q not found", q.raw[7]))
		return
	}
	doc := map[string]any{"id": q.r.URL.Path, "name": o.id, "status": o.status, "startTime": o.start.Format(time.RFC3339Nano)}
	if !o.end.IsZero() {
		doc["endTime"] = o.end.Format(time.RFC3339Nano)
	}
	if o.err != nil {
		doc["error"] = map[string]string{"code": o.err.code, "message": o.err.message}
	}
	writeJSON(q.w, http.StatusOK, doc)
}

// getOperationResult answers the Location URL: 202 while the operation
// runs, then the pool (200), or the operation's error.
func (s *Server) getOperationResult(q *request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.opOf(q)
	switch {
	case o == nil:
		writeError(q.w, errorf(http.StatusNotFound, "NotFound", "operation %q not found", q.raw[7]))
	case o.status == opInProgress:
		s.asyncHeaders(q.w, o)
		q.w.WriteHeader(http.StatusAccepted)
	case o.err != nil:
		writeError(q.w, o.err)
	default:
		writeJSON(q.w, http.StatusOK, s.poolView(o.pool))
	}
}
