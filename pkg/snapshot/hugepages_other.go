//go:build !linux

package snapshot

// adviseHugePages does nothing where there is no madvise(MADV_HUGEPAGE).
func adviseHugePages([]byte) {}
