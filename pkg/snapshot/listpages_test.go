package snapshot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// testSlot is a page's items, as pageSlot's.
type testSlot struct{ items []int }

// fakePages is a list of pages pages of 3 items each, read by its fetch:
// page i (from 0) holds 10i, 10i+1, 10i+2, and its continue token is
// "i+1". Asked for without a limit, it is one page of them all. behave,
// when not nil, runs after the token is handed on and before the items
// are: it may block, fail, or look at the other pages.
type fakePages struct {
	pages  int
	behave func(ctx context.Context, page int, p *fakePages) error

	mu         sync.Mutex
	started    []int // pages in the order they were asked for; -1 for the whole list
	reading    int   // pages being read now
	mostAtOnce int   // the most pages read at the same time
	restarted  int
	finished   map[int]chan struct{} // closed when page i is read
}

func (f *fakePages) finishedCh(page int) chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.finished == nil {
		f.finished = map[int]chan struct{}{}
	}
	if f.finished[page] == nil {
		f.finished[page] = make(chan struct{})
	}
	return f.finished[page]
}

func (f *fakePages) fetch(ctx context.Context, sl *testSlot, o metav1.ListOptions, next func(string)) error {
	sl.items = sl.items[:0]
	page, _ := strconv.Atoi(o.Continue)
	if o.Limit == 0 {
		page = -1
	}
	f.mu.Lock()
	f.started = append(f.started, page)
	f.reading++
	f.mostAtOnce = max(f.mostAtOnce, f.reading)
	f.mu.Unlock()
	defer func() { f.mu.Lock(); f.reading--; f.mu.Unlock() }()
	if page == -1 {
		for i := range f.pages {
			sl.items = append(sl.items, 10*i, 10*i+1, 10*i+2)
		}
		next("")
		return nil
	}
	token := ""
	if page+1 < f.pages {
		token = strconv.Itoa(page + 1)
	}
	next(token)
	if f.behave != nil {
		if err := f.behave(ctx, page, f); err != nil {
			return err
		}
	}
	sl.items = append(sl.items, 10*page, 10*page+1, 10*page+2)
	close(f.finishedCh(page))
	return nil
}

// untilEnded waits for ctx to end, as a page read until the list is given
// up; if another page is to end it, that one must be read side by side.
func untilEnded(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(10 * time.Second):
		return errors.New("waited 10s for another page to end the list: pages are not read side by side")
	}
}

// TestListPages: pages are read side by side, no more at a time than
// there are slots, and their items are taken in the list's order whatever
// order they are read in. The first page to fail ends the list with its
// error, not with the cancellations it caused; an expired continue token
// reads the list again in one piece, but a 410 to the first request is
// the server's answer.
func TestListPages(t *testing.T) {
	errBoom := errors.New("connection reset")
	waitFor := func(ctx context.Context, ch chan struct{}) error {
		select {
		case <-ch:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(10 * time.Second):
			return errors.New("waited 10s for another page: pages are not read side by side")
		}
	}
	tests := []struct {
		name          string
		pages, slots  int
		behave        func(ctx context.Context, page int, f *fakePages) error
		wantErr       error
		wantItems     int // pages' worth of items taken
		wantRestarted bool
		wantAtOnce    int // the most pages read at once, 0 to not check
	}{
		{name: "one page", pages: 1, slots: 2, wantItems: 1},
		{name: "read one at a time with one slot", pages: 4, slots: 1, wantItems: 4, wantAtOnce: 1},
		{name: "each even page waits for the next to be read", pages: 5, slots: 2, wantItems: 5, wantAtOnce: 2,
			behave: func(ctx context.Context, page int, f *fakePages) error {
				if page%2 == 0 && page+1 < f.pages {
					return waitFor(ctx, f.finishedCh(page+1))
				}
				return nil
			}},
		{name: "the first two pages wait for the third, with three slots", pages: 6, slots: 3, wantItems: 6, wantAtOnce: 3,
			behave: func(ctx context.Context, page int, f *fakePages) error {
				if page < 2 {
					return waitFor(ctx, f.finishedCh(2))
				}
				return nil
			}},
		{name: "a page fails while the one before is read", pages: 5, slots: 2, wantErr: errBoom,
			behave: func(ctx context.Context, page int, f *fakePages) error {
				switch page {
				case 1:
					// until the next page's failure ends it
					return fmt.Errorf("listing: %w", untilEnded(ctx))
				case 2:
					return errBoom
				}
				return nil
			}},
		{name: "an expired continue token", pages: 5, slots: 2, wantItems: 5, wantRestarted: true,
			behave: func(ctx context.Context, page int, f *fakePages) error {
				if page == 3 {
					return apierrors.NewResourceExpired("continue token expired")
				}
				return nil
			}},
		{name: "410 to the first request", pages: 3, slots: 2, wantErr: apierrors.NewResourceExpired("too old"),
			behave: func(ctx context.Context, page int, f *fakePages) error {
				if page == 0 {
					return apierrors.NewResourceExpired("too old")
				}
				return untilEnded(ctx)
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakePages{pages: tc.pages, behave: tc.behave}
			var got []int
			var lasts []bool
			commit := func(sl *testSlot, last bool) {
				got = append(got, sl.items...)
				lasts = append(lasts, last)
			}
			restart := func() { got, lasts = nil, nil; f.restarted++ }
			err := listPages(context.Background(), "", make([]testSlot, tc.slots), f.fetch, commit, restart)
			if tc.wantErr != nil {
				if err == nil || err.Error() != tc.wantErr.Error() {
					t.Fatalf("error %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var want []int
			for i := range tc.wantItems {
				want = append(want, 10*i, 10*i+1, 10*i+2)
			}
			if !slices.Equal(got, want) {
				t.Errorf("items %v, want %v", got, want)
			}
			if len(lasts) == 0 || !lasts[len(lasts)-1] || slices.Contains(lasts[:len(lasts)-1], true) {
				t.Errorf("commits said last %v, want only the last one", lasts)
			}
			if (f.restarted > 0) != tc.wantRestarted || tc.wantRestarted && f.started[len(f.started)-1] != -1 {
				t.Errorf("restarted %d times, then read %v; want a restart %v", f.restarted, f.started, tc.wantRestarted)
			}
			if tc.wantAtOnce > 0 && f.mostAtOnce != tc.wantAtOnce {
				t.Errorf("%d pages read at once at most, want %d", f.mostAtOnce, tc.wantAtOnce)
			}
		})
	}
}

// TestListPagesEndsWithTheCallersCancellation: a list cut short by its
// caller ends with the caller's cause, and no page is read after.
func TestListPagesEndsWithTheCallersCancellation(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	interrupted := errors.New("interrupted")
	f := &fakePages{pages: 10, behave: func(ctx context.Context, page int, f *fakePages) error {
		if page == 1 {
			cancel(interrupted)
		}
		return untilEnded(ctx)
	}}
	err := listPages(ctx, "", make([]testSlot, 2), f.fetch, func(*testSlot, bool) { t.Error("a page was taken") }, func() { t.Error("restarted") })
	if !errors.Is(err, context.Canceled) && !errors.Is(err, interrupted) {
		t.Fatalf("error %v, want the caller's", err)
	}
	if len(f.started) > 2 {
		t.Errorf("pages %v asked for, want none after the cancellation", f.started)
	}
}

// TestReadPage: a page hands on its continue token as soon as it has it,
// and is committed only after the page before; one that ends without a
// token, or while it waits for the page before, fails.
func TestReadPage(t *testing.T) {
	errBoom := errors.New("connection reset")
	closed := make(chan struct{})
	close(closed)
	tests := []struct {
		name      string
		fetch     func(next func(string)) error
		before    chan struct{} // nil: never committed
		cancel    bool          // the list ends (errBoom) while the page is read
		wantErr   string
		wantToken string // what token yields; "closed" when it is closed without one
		wantLast  bool
	}{
		{name: "the last page, the one before committed", fetch: func(next func(string)) error { next(""); return nil },
			before: closed, wantToken: "", wantLast: true},
		{name: "a page with more after it", fetch: func(next func(string)) error { next("2"); return nil },
			before: closed, wantToken: "2"},
		{name: "no continue token", fetch: func(func(string)) error { return nil },
			before: closed, wantErr: "the page has no continue token", wantToken: "closed"},
		{name: "fails before its token", fetch: func(func(string)) error { return errBoom },
			before: closed, wantErr: errBoom.Error(), wantToken: "closed"},
		{name: "the list ends while it waits for the page before", fetch: func(next func(string)) error { next("2"); return nil },
			cancel: true, wantErr: errBoom.Error(), wantToken: "2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			if tc.cancel {
				cancel(errBoom)
			}
			fetch := func(_ context.Context, _ *testSlot, _ metav1.ListOptions, next func(string)) error {
				return tc.fetch(next)
			}
			token := make(chan string, 1)
			last, err := readPage(ctx, &testSlot{}, metav1.ListOptions{}, fetch, token, tc.before)
			if (err == nil) != (tc.wantErr == "") || err != nil && err.Error() != tc.wantErr {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
			got, ok := <-token
			if !ok {
				got = "closed"
			}
			if got != tc.wantToken || last != tc.wantLast {
				t.Errorf("token %q, last %v; want %q, %v", got, last, tc.wantToken, tc.wantLast)
			}
		})
	}
}
