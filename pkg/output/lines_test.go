package output

import (
	"errors"
	"slices"
	"testing"
)

func TestLineWriter(t *testing.T) {
	tests := []struct {
		name   string
		writes []string
		want   []string
	}{
		{name: "whole lines", writes: []string{"a\nb\n"}, want: []string{"a", "b"}},
		{name: "a line in pieces is handed on once whole", writes: []string{"he", "llo\nwor", "ld\n"}, want: []string{"hello", "world"}},
		{name: "an unended last line waits for Flush", writes: []string{"a\nrest"}, want: []string{"a", "rest"}},
		{name: "empty lines are lines", writes: []string{"\n\n"}, want: []string{"", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			w := &LineWriter{Line: func(l string) error { got = append(got, l); return nil }}
			for _, s := range tt.writes {
				if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", s, n, err)
				}
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("lines %q, want %q", got, tt.want)
			}
		})
	}
	t.Run("Line's error stops the write", func(t *testing.T) {
		failed := errors.New("closed")
		w := &LineWriter{Line: func(string) error { return failed }}
		if _, err := w.Write([]byte("a\nb\n")); !errors.Is(err, failed) {
			t.Fatalf("Write = %v, want %v", err, failed)
		}
	})
}
