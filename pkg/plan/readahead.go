package plan

import (
	"context"
	"io"
	"sync"
)

// readAhead reads body on a goroutine of its own, up to aheadChunks chunks
// ahead of its reader: reading a body costs its decompression (the API
// server gzips any list over 128 KiB, and the client's transport gunzips
// it as it is read: transport.GunzipFaster), which then runs beside the
// decoding of the chunks before instead of taking turns with it. (An
// io.Pipe would hold the goroutine until the reader had taken all of its
// chunk: the two would mostly take turns.) Close ends the request
// (cancel) and waits for the goroutine, so none outlives the page.
func readAhead(body io.ReadCloser, cancel context.CancelFunc) io.ReadCloser {
	a := &aheadReader{
		filled: make(chan []byte, aheadChunks),
		free:   make(chan []byte, aheadChunks),
		quit:   make(chan struct{}),
		done:   make(chan struct{}),
		cancel: cancel,
	}
	for range aheadChunks {
		a.free <- aheadBuffers.Get().(*[aheadChunkSize]byte)[:]
	}
	go a.fill(body)
	return a
}

const (
	aheadChunks    = 3
	aheadChunkSize = 256 << 10
)

// aheadBuffers keeps the chunks from one page for the next.
var aheadBuffers = sync.Pool{New: func() any { return new([aheadChunkSize]byte) }}

type aheadReader struct {
	filled chan []byte // read from the body, in order; closed after the last
	free   chan []byte // taken by the reader, to fill again
	err    error       // why the body ended (nil: io.EOF), set before filled is closed
	quit   chan struct{}
	done   chan struct{}
	cancel context.CancelFunc
	cur    []byte // what the reader has not taken of its chunk
	chunk  []byte // the whole of that chunk, to give back
}

func (a *aheadReader) fill(body io.ReadCloser) {
	defer close(a.done)
	defer body.Close()
	defer close(a.filled)
	for {
		var buf []byte
		select {
		case buf = <-a.free:
		case <-a.quit:
			return
		}
		// not io.ReadFull: it reports the end of a body that does not
		// fill the chunk as the body's own io.ErrUnexpectedEOF (a
		// truncated gzip stream) would be reported
		buf = buf[:cap(buf)]
		n, err := 0, error(nil)
		for n < len(buf) && err == nil {
			var m int
			m, err = body.Read(buf[n:])
			n += m
		}
		if n > 0 {
			a.filled <- buf[:n] // never blocks: there are as many places as chunks
		}
		if err != nil {
			if err != io.EOF {
				a.err = err
			}
			return
		}
	}
}

func (a *aheadReader) Read(p []byte) (int, error) {
	for len(a.cur) == 0 {
		if a.chunk != nil {
			a.free <- a.chunk[:cap(a.chunk)] // never blocks, as above
			a.chunk = nil
		}
		buf, ok := <-a.filled
		if !ok {
			if a.err != nil {
				return 0, a.err
			}
			return 0, io.EOF
		}
		a.cur, a.chunk = buf, buf
	}
	n := copy(p, a.cur)
	a.cur = a.cur[n:]
	return n, nil
}

// Close stops the goroutine (the request too, if still read) and keeps
// the chunks for the next page.
func (a *aheadReader) Close() error {
	close(a.quit)
	a.cancel()
	<-a.done
	if a.chunk != nil {
		a.free <- a.chunk[:cap(a.chunk)]
		a.chunk = nil
	}
	for buf := range a.filled {
		a.free <- buf[:cap(buf)]
	}
	close(a.free)
	for buf := range a.free {
		aheadBuffers.Put((*[aheadChunkSize]byte)(buf))
	}
	return nil
}
