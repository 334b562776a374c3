package snapshot

import "io"

// pageStreamChunk is how much of a body a pageStream reads at a time: big
// enough that few items straddle two chunks, small enough to stay in the
// core's cache between its reading and its decoding.
const pageStreamChunk = 256 << 10

// pageStream reads a list's body a chunk at a time and hands out the
// chunk's own bytes (next): an item is decoded where the body was read
// (gunzipped) to, on the same goroutine, so its bytes are still in that
// core's cache. (Gunzipping on a goroutine of its own and decoding the
// chunks on another cost a fifth more CPU at 150,000 pods, the bytes
// moving between cores twice: listPages reads pages side by side
// instead.) One pageStream serves the pages of a list one after another
// (reset).
type pageStream struct {
	body  io.Reader
	buf   []byte // the chunk read last
	cur   []byte // what has not been taken of it
	err   error  // why the body ended, once it has (io.EOF at its end)
	spill []byte // next's copy of bytes that straddle two chunks
}

// reset makes s read body from its start.
func (s *pageStream) reset(body io.Reader) {
	if s.buf == nil {
		s.buf = make([]byte, pageStreamChunk)
	}
	s.body, s.cur, s.err = body, nil, nil
}

// advance reads the next chunk; at the end of the body it returns io.EOF,
// or why the body ended.
func (s *pageStream) advance() error {
	if s.err != nil {
		return s.err
	}
	// not io.ReadFull: it reports the end of a body that does not fill
	// the chunk as the body's own io.ErrUnexpectedEOF (a truncated gzip
	// stream) would be reported
	n := 0
	for n < len(s.buf) && s.err == nil {
		var m int
		m, s.err = s.body.Read(s.buf[n:])
		n += m
	}
	s.cur = s.buf[:n]
	if n == 0 {
		return s.err
	}
	return nil
}

func (s *pageStream) Read(p []byte) (int, error) {
	if len(s.cur) == 0 {
		if err := s.advance(); err != nil {
			return 0, err
		}
	}
	n := copy(p, s.cur)
	s.cur = s.cur[n:]
	return n, nil
}

func (s *pageStream) ReadByte() (byte, error) {
	if len(s.cur) == 0 {
		if err := s.advance(); err != nil {
			return 0, err
		}
	}
	c := s.cur[0]
	s.cur = s.cur[1:]
	return c, nil
}

// Discard skips the next n bytes, as bufio.Reader's does.
func (s *pageStream) Discard(n int) (int, error) {
	skipped := 0
	for skipped < n {
		if len(s.cur) == 0 {
			if err := s.advance(); err != nil {
				return skipped, err
			}
		}
		k := min(n-skipped, len(s.cur))
		s.cur = s.cur[k:]
		skipped += k
	}
	return skipped, nil
}

// next returns the next n bytes, valid until s is next read. Where they
// lie in one chunk they are the chunk's own; the few that straddle two
// are copied into s.spill. At the end of the body before n bytes it
// returns those it read with io.ErrUnexpectedEOF, or why the body ended.
func (s *pageStream) next(n int) ([]byte, error) {
	if len(s.cur) >= n {
		b := s.cur[:n:n]
		s.cur = s.cur[n:]
		return b, nil
	}
	b := append(s.spill[:0], s.cur...)
	s.cur = nil
	for len(b) < n {
		if err := s.advance(); err != nil {
			s.spill = b
			return b, noEOF(err)
		}
		k := min(n-len(b), len(s.cur))
		b = append(b, s.cur[:k]...)
		s.cur = s.cur[k:]
	}
	s.spill = b
	return b, nil
}
