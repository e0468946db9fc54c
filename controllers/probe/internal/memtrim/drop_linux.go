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
	before = rssFile()
	for _, r := range ranges {
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, r.Start, r.Size(), syscall.MADV_DONTNEED); errno != 0 {
			return before, rssFile(), fmt.Errorf("madvise %#x-%#x: %w", r.Start, r.End, errno)
		}
	}
	return before, rssFile(), nil
}

func rssFile() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	f, _ := Resident(string(b))
	return f
}
