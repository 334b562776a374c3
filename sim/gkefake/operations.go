package gkefake

import (
	"errors"
	"fmt"
	"time"

	container "google.golang.org/api/container/v1"
)

// operation is a node pool's update as operations.get reports it
// (https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/projects.locations.operations#Operation).
type operation struct {
	op   container.Operation
	pool *pool
	// done and total count the nodes, reported as the progress metrics
	// "nodes done" and "nodes total" (API reference,
	// OperationProgress.metrics).
	done, total int
	// stop is a cancel's request: the runner ends at its next step.
	stop bool
	// complete is closed by completeUpgrade: the soak ends.
	complete chan struct{}
}

// Canonical error codes an ended operation reports
// (https://cloud.google.com/apis/design/errors#handling_errors).
const (
	codeCancelled         = 1
	codeResourceExhausted = 8
	codeInternal          = 13
)

// errCancelled ends a runner that a cancel stopped.
var errCancelled = errors.New("the operation was cancelled")

// newOpLocked records a RUNNING UPGRADE_NODES operation on the pool.
func (s *Server) newOpLocked(p *pool, detail string) *operation {
	s.seq++
	name := fmt.Sprintf("operation-%d-%08x", time.Now().UnixMilli(), uint32(s.seq)*2654435761)
	o := &operation{pool: p, complete: make(chan struct{}), op: container.Operation{
		Name: name, OperationType: "UPGRADE_NODES", Status: "RUNNING", Location: p.c.location, Zone: p.c.location,
		Detail: detail, StartTime: now(), TargetLink: s.view(p).SelfLink,
		SelfLink: fmt.Sprintf("%sv1/projects/%s/locations/%s/operations/%s", s.Endpoint, p.c.project, p.c.location, name),
	}}
	s.ops[name] = o
	s.opOrder = append(s.opOrder, name)
	return o
}

// doneOpLocked records an operation that ended at once (an update to
// what the pool runs already, a rollback with nothing to undo).
func (s *Server) doneOpLocked(p *pool, detail string) *container.Operation {
	o := s.newOpLocked(p, detail)
	o.op.Status, o.op.EndTime = "DONE", now()
	return s.opView(o)
}

func now() string { return time.Now().UTC().Format(time.RFC3339Nano) }

// opView is the operation with its progress.
func (s *Server) opView(o *operation) *container.Operation {
	op := o.op
	op.Progress = &container.OperationProgress{Metrics: []*container.Metric{
		{Name: "nodes done", IntValue: int64(o.done), ForceSendFields: []string{"IntValue"}},
		{Name: "nodes total", IntValue: int64(o.total), ForceSendFields: []string{"IntValue"}},
	}}
	if op.Error != nil {
		e := *op.Error
		op.Error = &e
	}
	return &op
}

// endLocked ends the operation: DONE, with the error the runner ended
// on (RESOURCE_EXHAUSTED for a surge Compute cannot create, else
// INTERNAL), CANCELLED for a cancel (API reference, Operation.status: DONE "The
// operation is done, either cancelled or completed").
func (s *Server) endLocked(o *operation, err error) {
	o.op.Status, o.op.EndTime = "DONE", now()
	switch {
	case errors.Is(err, errCancelled):
		o.op.Error = &container.Status{Code: codeCancelled, Message: "Operation was cancelled."}
		o.op.StatusMessage = o.op.Error.Message
	case err != nil:
		code := int64(codeInternal)
		if errors.As(err, new(errResourceExhausted)) {
			code = codeResourceExhausted
		}
		o.op.Error = &container.Status{Code: code, Message: err.Error()}
		o.op.StatusMessage = err.Error()
	}
	s.notifyLocked()
}

func (s *Server) opLocked(q *request) (*operation, error) {
	o := s.ops[q.part(5)]
	if o == nil || o.pool.c.project != q.part(1) || o.pool.c.location != q.part(3) {
		return nil, notFound("Not found: projects/%s/locations/%s/operations/%s.", q.part(1), q.part(3), q.part(5))
	}
	return o, nil
}

func (s *Server) getOperation(q *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, err := s.opLocked(q)
	if err != nil {
		return nil, err
	}
	return s.opView(o), nil
}

// listOperations lists the location's operations, oldest first
// (https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/projects.locations.operations/list).
func (s *Server) listOperations(q *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := &container.ListOperationsResponse{}
	for _, name := range s.opOrder {
		o := s.ops[name]
		if o.pool.c.project == q.part(1) && (q.part(3) == "-" || o.pool.c.location == q.part(3)) {
			out.Operations = append(out.Operations, s.opView(o))
		}
	}
	return out, nil
}

// cancelOperation cancels a running upgrade: the nodes under way finish,
// no other starts (surge), or the upgrade pauses in its phase
// (blue/green); the deletion of the blue pool cannot be cancelled
// (https://cloud.google.com/kubernetes-engine/docs/concepts/node-pool-upgrade-strategies#cancel-surge,
// #cancel-bg). The operation reports ABORTING until the runner stops.
func (s *Server) cancelOperation(q *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, err := s.opLocked(q)
	if err != nil {
		return nil, err
	}
	if o.op.Status == "DONE" {
		return nil, failedPrecondition("Operation %s is already done.", o.op.Name)
	}
	if up := o.pool.up; up != nil && up.op == o && up.bg != nil && up.bg.Phase == "DELETING_BLUE_POOL" {
		return nil, failedPrecondition("Operation %s cannot be cancelled: the blue pool is being deleted.", o.op.Name)
	}
	o.stop, o.op.Status = true, "ABORTING"
	s.notifyLocked()
	return &container.Empty{}, nil
}

// stopping reports whether a cancel asked the operation to stop.
func (s *Server) stopping(o *operation) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return o.stop
}

// addDone counts n more nodes done.
func (s *Server) addDone(o *operation, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o.done += n
	s.notifyLocked()
}
