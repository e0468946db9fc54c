//go:build linux

package memtrim

import (
	"fmt"
	"os"
	"syscall"
)

// DropExecutablePages unmaps the resident pages of the running executable's
// read-only mappings (code, read-only data) and returns the process's
// RssFile (kB) before and after.
func DropExecutablePages() (before, after int64, err error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, 0, fmt.Errorf("find the executable: %w", err)
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, 0, err
	}
	ranges, err := ReadOnlyRanges(string(maps), exe)
	if err != nil {
		return 0, 0, err
	}
	before, _ = selfResident()
	for _, r := range ranges {
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, r.Start, r.Size(), syscall.MADV_DONTNEED); errno != 0 {
			after, _ = selfResident()
			return before, after, fmt.Errorf("madvise %#x-%#x: %w", r.Start, r.End, errno)
		}
	}
	after, _ = selfResident()
	return before, after, nil
}
