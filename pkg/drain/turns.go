package drain

import (
	"context"
	"sync"
)

// turns lets one eviction per PodDisruptionBudget be in flight across all
// drains of a Drainer. Concurrent evictions under one budget conflict on its
// status, and the apiserver retries the loser after 500 ms (EvictionsRetry in
// pkg/registry/core/pod/storage/eviction.go), up to 20 times; one after
// another they cost a round trip each. Pods under no budget, or under
// different ones, are evicted at the same time.
type turns struct {
	mu sync.Mutex
	m  map[string]*turn
}

type turn struct {
	token chan struct{} // holds a value while an eviction is in flight
	users int           // guarded by turns.mu
}

// take waits for key's turn; it reports false when ctx ends or stop closes
// first. The empty key has no turns. release must be called once.
func (ts *turns) take(ctx context.Context, stop <-chan struct{}, key string) (release func(), ok bool) {
	if key == "" {
		return func() {}, true
	}
	ts.mu.Lock()
	if ts.m == nil {
		ts.m = map[string]*turn{}
	}
	tn := ts.m[key]
	if tn == nil {
		tn = &turn{token: make(chan struct{}, 1)}
		ts.m[key] = tn
	}
	tn.users++
	ts.mu.Unlock()
	leave := func() {
		ts.mu.Lock()
		tn.users--
		if tn.users == 0 {
			delete(ts.m, key)
		}
		ts.mu.Unlock()
	}
	select {
	case tn.token <- struct{}{}:
		return func() {
			<-tn.token
			leave()
		}, true
	case <-ctx.Done():
	case <-stop:
	}
	leave()
	return nil, false
}

// len is the number of budgets with an eviction in flight or waiting.
func (ts *turns) len() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return len(ts.m)
}
