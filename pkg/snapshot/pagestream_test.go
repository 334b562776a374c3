package snapshot

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"unsafe"
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

// within says whether b's bytes lie in buf's.
func within(b, buf []byte) bool {
	if len(b) == 0 || cap(buf) == 0 {
		return false
	}
	p, start := uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	return p >= start && p+uintptr(len(b)) <= start+uintptr(cap(buf))
}

// TestPageStreamReadsTheBodyInOrder: whatever mix of next, ReadByte,
// Discard and Read takes a body, it gets the body's bytes in order across
// chunks, next hands out the chunk's own bytes where they lie in one and
// a copy only where they straddle two, and the stream ends as the body
// does: at io.EOF, or at its error, io.ErrUnexpectedEOF of a truncated
// gzip stream included, which must not read as the end of the page.
func TestPageStreamReadsTheBodyInOrder(t *testing.T) {
	data := make([]byte, 3*pageStreamChunk+12345)
	for i := range data {
		data[i] = byte(i * 7)
	}
	broken := errors.New("connection reset")
	// a take reads n bytes: by next (0), ReadByte (1), Discard (2) or Read (3)
	type take struct{ how, n int }
	items := []take{{0, 4}, {1, 1}, {0, 8500}, {2, 300}, {0, pageStreamChunk + 10}, {3, 5000}, {0, 1}, {2, pageStreamChunk}, {1, 1}}
	tests := []struct {
		name    string
		size    int
		bodyErr error
	}{
		{"empty body", 0, io.EOF},
		{"less than a chunk", 1000, io.EOF},
		{"a chunk exactly", pageStreamChunk, io.EOF},
		{"chunks and a bit", len(data), io.EOF},
		{"truncated gzip stream", len(data) - 1, io.ErrUnexpectedEOF},
		{"broken connection", pageStreamChunk + 1, broken},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s pageStream
			s.reset(&chunkedBody{data: data[:tc.size], step: 7000, err: tc.bodyErr})
			var got []byte
			var err error
			var tk take
			for i := 0; err == nil; i++ {
				tk = items[i%len(items)]
				at := len(got)
				switch tk.how {
				case 0:
					chunkLeft := len(s.cur)
					var b []byte
					b, err = s.next(tk.n)
					if err == nil {
						inChunk := tk.n <= chunkLeft
						if inChunk != within(b, s.buf) || !inChunk && !within(b, s.spill) {
							t.Fatalf("next(%d) with %d bytes left of the chunk: in the chunk %v, in the spill %v", tk.n, chunkLeft, within(b, s.buf), within(b, s.spill))
						}
					} else if len(b) > tc.size-at {
						t.Fatalf("next(%d) at the end returned %d bytes, %d were left", tk.n, len(b), tc.size-at)
					}
					got = append(got, b...)
				case 1:
					var c byte
					if c, err = s.ReadByte(); err == nil {
						got = append(got, c)
					}
				case 2:
					var n int
					n, err = s.Discard(tk.n)
					got = append(got, data[at:at+n]...)
				case 3:
					p := make([]byte, tk.n)
					var n int
					n, err = s.Read(p)
					got = append(got, p[:n]...)
				}
			}
			// the end of a whole body is io.EOF, but within what next was
			// asked for
			want := tc.bodyErr
			if want == io.EOF && tk.how == 0 {
				want = io.ErrUnexpectedEOF
			}
			if err != want {
				t.Fatalf("read ended with %v, want %v", err, want)
			}
			if !bytes.Equal(got, data[:tc.size]) {
				t.Fatalf("read %d bytes, not the body's %d in order", len(got), tc.size)
			}
		})
	}
}
