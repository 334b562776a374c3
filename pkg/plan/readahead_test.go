package plan

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
)

// chunkedBody returns data a few bytes at a time, as a network body does,
// then err (io.EOF for a whole body), and records being closed.
type chunkedBody struct {
	data   []byte
	step   int
	err    error
	closed bool
}

func (b *chunkedBody) Read(p []byte) (int, error) {
	if len(b.data) == 0 {
		return 0, b.err
	}
	n := copy(p[:min(len(p), b.step)], b.data)
	b.data = b.data[n:]
	return n, nil
}

func (b *chunkedBody) Close() error { b.closed = true; return nil }

// TestReadAheadReadsTheBodyInOrder: what the reader gets is the body, in
// order, across chunks, and ends as the body ends: at io.EOF, or at its
// error, io.ErrUnexpectedEOF of a truncated gzip stream included, which
// must not read as the end of the page.
func TestReadAheadReadsTheBodyInOrder(t *testing.T) {
	data := make([]byte, aheadChunks*aheadChunkSize*2+12345)
	for i := range data {
		data[i] = byte(i * 7)
	}
	broken := errors.New("connection reset")
	tests := []struct {
		name    string
		size    int
		bodyErr error
	}{
		{"empty body", 0, io.EOF},
		{"less than a chunk", 1000, io.EOF},
		{"a chunk exactly", aheadChunkSize, io.EOF},
		{"more chunks than are kept ahead", len(data), io.EOF},
		{"truncated gzip stream", len(data) - 1, io.ErrUnexpectedEOF},
		{"broken connection", aheadChunkSize + 1, broken},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := &chunkedBody{data: data[:tc.size], step: 7000, err: tc.bodyErr}
			r := readAhead(body, func() {})
			got, err := io.ReadAll(r)
			if tc.bodyErr == io.EOF && err != nil || tc.bodyErr != io.EOF && !errors.Is(err, tc.bodyErr) {
				t.Fatalf("read ended with %v, want %v", err, tc.bodyErr)
			}
			if !bytes.Equal(got, data[:tc.size]) {
				t.Fatalf("read %d bytes, not the body's %d in order", len(got), tc.size)
			}
			if err := r.Close(); err != nil || !body.closed {
				t.Fatalf("close: %v, body closed: %v", err, body.closed)
			}
		})
	}
}

// blockingBody blocks in Read until its request is cancelled, as a body
// whose server sends nothing more.
type blockingBody struct {
	ctx context.Context
}

func (b blockingBody) Read([]byte) (int, error) {
	<-b.ctx.Done()
	return 0, b.ctx.Err()
}

func (blockingBody) Close() error { return nil }

// TestReadAheadCloseEndsTheRequest: a page given up half read (a decoding
// error, the snapshot cancelled) ends its request, so Close does not wait
// for a body that sends nothing more.
func TestReadAheadCloseEndsTheRequest(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r := readAhead(blockingBody{ctx}, cancel)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() == nil {
		t.Fatal("the request was not cancelled")
	}
}
