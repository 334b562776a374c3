package snapshot

import (
	"testing"
	"unsafe"
)

// TestWholePages: the range given to madvise starts on a page and ends on
// one, inside the slice, and covers every whole page of it.
func TestWholePages(t *testing.T) {
	const page = 4096
	buf := make([]byte, 10*page)
	// an offset into buf that starts on a page, whatever buf's alignment
	base := int((page - uintptr(unsafe.Pointer(&buf[0]))%page) % page)
	tests := []struct {
		name           string
		from, to       int // of the slice, after base
		wantFrom, want int // of the result, after base; want 0: none
	}{
		{"pages exactly", 0, 3 * page, 0, 3 * page},
		{"starts mid-page", 100, 3 * page, page, 2 * page},
		{"ends mid-page", 0, 3*page - 1, 0, 2 * page},
		{"both", 1, 3*page + 1, page, 2 * page},
		{"less than a page", 10, page - 10, 0, 0},
		{"within two pages, no whole one", page - 10, 2*page - 10, 0, 0},
		{"empty", page, page, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := buf[base+tc.from : base+tc.to]
			got := wholePages(b, page)
			if len(got) != tc.want {
				t.Fatalf("%d bytes, want %d", len(got), tc.want)
			}
			if tc.want == 0 {
				return
			}
			if off := int(uintptr(unsafe.Pointer(&got[0])) - uintptr(unsafe.Pointer(&buf[base]))); off != tc.wantFrom {
				t.Fatalf("starts %d bytes in, want %d", off, tc.wantFrom)
			}
		})
	}
}

// TestAdviseHugePagesKeepsTheSlice: the advice changes nothing of what
// the slice holds, before or after it is written.
func TestAdviseHugePagesKeepsTheSlice(t *testing.T) {
	s := make([]int64, 0, hugePagesFrom/8+1000)
	s = append(s, 1, 2, 3)
	adviseHugePagesFor(s)
	for i := int64(4); i <= int64(cap(s)); i++ {
		s = append(s, i)
	}
	for i, v := range s {
		if v != int64(i+1) {
			t.Fatalf("s[%d] = %d, want %d", i, v, i+1)
		}
	}
}
