package snapshot

import (
	"os"
	"syscall"
)

// adviseHugePages tells the kernel that b is better backed by transparent
// huge pages (madvise(MADV_HUGEPAGE)), which it honours when
// /sys/kernel/mm/transparent_hugepage/enabled is "madvise" or "always".
// Go's runtime no longer asks for them itself. An error (no such advice,
// huge pages off) leaves things as they were, so it is ignored.
func adviseHugePages(b []byte) {
	if b = wholePages(b, uintptr(os.Getpagesize())); len(b) > 0 {
		_ = syscall.Madvise(b, syscall.MADV_HUGEPAGE)
	}
}
