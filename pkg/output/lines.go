package output

import "bytes"

// LineWriter hands each whole line written to it to Line, without its
// newline: a line written in pieces is handed on once whole. Flush hands
// on what follows the last newline.
type LineWriter struct {
	Line func(line string) error
	buf  []byte
}

// Write hands on the lines p completes; Line's error stops it.
func (w *LineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(w.buf[:i])
		w.buf = w.buf[i+1:]
		if err := w.Line(line); err != nil {
			return len(p), err
		}
	}
}

// Flush hands on the last line when no newline ended it.
func (w *LineWriter) Flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	line := string(w.buf)
	w.buf = nil
	return w.Line(line)
}
