package snapshot

import (
	"context"
	"errors"
	"runtime"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// pagesAtOnce is how many pages of a list are read at the same time: one
// per core (gunzipping and decoding a page is one goroutine's work), but
// no more than 4, so as not to take more of the API server.
func pagesAtOnce() int {
	return max(1, min(runtime.GOMAXPROCS(0), 4))
}

// listPages reads every page of a list, up to len(slots) of them at the
// same time, each on a goroutine of its own that reads (gunzips) and
// decodes it: a page's continue token comes before its items, so the next
// page is asked for as soon as the token is read. fetch reads a page into
// its slot, emptied before, and passes its continue token to next as soon
// as it has it; commit takes the slot's items, page after page in order,
// last for the list's last page. When a continue token has expired, the
// list is read again in one piece after restart, as client-go's
// pager.List does: the items are consistent either way.
func listPages[S any](ctx context.Context, fieldSelector string, slots []S, fetch func(context.Context, *S, metav1.ListOptions, func(string)) error,
	commit func(sl *S, last bool), restart func()) error {
	expired, err := readPages(ctx, fieldSelector, slots, fetch, commit)
	if !expired {
		return err
	}
	restart()
	last := false
	if err := fetch(ctx, &slots[0], metav1.ListOptions{FieldSelector: fieldSelector}, func(next string) { last = next == "" }); err != nil {
		return err
	}
	if !last {
		return errors.New("a list asked for in one piece came in pages")
	}
	commit(&slots[0], true)
	return nil
}

// readPages is listPages but for the expired continue token, which it
// reports in expired with the error.
func readPages[S any](ctx context.Context, fieldSelector string, slots []S, fetch func(context.Context, *S, metav1.ListOptions, func(string)) error,
	commit func(sl *S, last bool)) (expired bool, err error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var mu sync.Mutex
	// the first page to fail cancels the others, and its error is the one
	// returned, not the cancellations it caused
	fail := func(e error, continued bool) {
		mu.Lock()
		if err == nil {
			err, expired = e, continued && apierrors.IsResourceExpired(e)
		}
		mu.Unlock()
		cancel(e)
	}
	free := make(chan *S, len(slots))
	for i := range slots {
		free <- &slots[i]
	}
	committed := make(chan struct{}) // the page before's, closed once its items are taken
	close(committed)
	var wg sync.WaitGroup
	o := metav1.ListOptions{Limit: listPageSize, FieldSelector: fieldSelector}
	for {
		var sl *S
		select {
		case sl = <-free:
		case <-ctx.Done():
		}
		// a slot freed by a page that failed may come with ctx's end:
		// no page is asked for after it
		if sl == nil || ctx.Err() != nil {
			break
		}
		// the page's continue token, sent once; closed without one when
		// the page fails before it
		token := make(chan string, 1)
		done := make(chan struct{})
		before, page := committed, o
		wg.Go(func() {
			defer func() { free <- sl }() // never blocks: there is room for every slot
			last, e := readPage(ctx, sl, page, fetch, token, before)
			if e != nil {
				fail(e, page.Continue != "")
				return
			}
			commit(sl, last)
			close(done)
		})
		next, ok := <-token
		if !ok || next == "" {
			break
		}
		o.Continue, committed = next, done
	}
	wg.Wait()
	return expired, err
}

// readPage fetches one page into sl, sends its continue token on token as
// soon as fetch passes it (closing token when the page fails before), and
// waits for the page before it to be committed: pages are committed in
// order. It reports whether the page is the list's last.
func readPage[S any](ctx context.Context, sl *S, o metav1.ListOptions, fetch func(context.Context, *S, metav1.ListOptions, func(string)) error,
	token chan<- string, before <-chan struct{}) (last bool, err error) {
	sent := false
	err = fetch(ctx, sl, o, func(next string) {
		if !sent {
			sent, last = true, next == ""
			token <- next
		}
	})
	if !sent {
		close(token)
		if err == nil {
			err = errors.New("the page has no continue token")
		}
	}
	if err == nil {
		select {
		case <-before:
		case <-ctx.Done():
			err = context.Cause(ctx)
		}
	}
	return last, err
}
