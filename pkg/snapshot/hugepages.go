package snapshot

import "unsafe"

// hugePagesFrom is the size from which a list's slice is backed by huge
// pages where the kernel has them: the pods of a 150,000-pod cluster take
// a slice of 178 MB, written once as they are decoded, and faulting it in
// 4 KiB at a time cost the client more CPU than decoding the pods (page
// faults are dear in virtual machines). Small lists are left alone.
const hugePagesFrom = 8 << 20

// adviseHugePagesFor asks for huge pages for the memory behind s's
// capacity when it is large (adviseHugePages: a hint, without effect
// where the kernel has none or they are off).
func adviseHugePagesFor[T any](s []T) {
	var zero T
	size := uintptr(cap(s)) * unsafe.Sizeof(zero)
	if size < hugePagesFrom {
		return
	}
	adviseHugePages(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), size))
}

// wholePages returns the part of b made of whole pages of pageSize bytes:
// madvise takes a range that starts on a page.
func wholePages(b []byte, pageSize uintptr) []byte {
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	skip := (pageSize - start%pageSize) % pageSize
	if skip >= uintptr(len(b)) {
		return nil
	}
	n := (uintptr(len(b)) - skip) / pageSize * pageSize
	return b[skip : skip+n]
}
