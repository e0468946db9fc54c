// Package memtrim gives back the resident pages that only the agent's
// start-up used: those of its own executable, and the Go heap's free ones.
//
// Why: after start-up most of the executable's code and read-only data
// (client-go, the API types, gRPC, …) is resident, because package
// initialisation ran through it and the kernel maps neighbouring pages of
// the file on each fault; at rest the agent touches under 1 MiB of it again
// (bench/RESULTS.md, issue 28). madvise(MADV_DONTNEED) on the executable's
// read-only mappings unmaps those pages from the process: the file is
// unchanged and its pages stay in the page cache, so a page used again is
// mapped back on its next access (a minor fault). Writable mappings are
// never touched: MADV_DONTNEED would discard what was written to them.
package memtrim

import (
	"bufio"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// Range is a mapping [Start, End) of the process's address space.
type Range struct{ Start, End uintptr }

// Size is the range's length in bytes.
func (r Range) Size() uintptr { return r.End - r.Start }

// ReadOnlyRanges returns the mappings of the file exe that are not
// writable, from the text of /proc/<pid>/maps ("start-end perms offset dev
// inode path" per line).
func ReadOnlyRanges(maps, exe string) ([]Range, error) {
	var out []Range
	sc := bufio.NewScanner(strings.NewReader(maps))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 || strings.Join(f[5:], " ") != exe {
			continue
		}
		if len(f[1]) < 2 || f[1][0] != 'r' || f[1][1] != '-' {
			continue // writable (or unreadable): never dropped
		}
		bounds := strings.SplitN(f[0], "-", 2)
		if len(bounds) != 2 {
			return nil, fmt.Errorf("maps line %q: no range", sc.Text())
		}
		start, err1 := strconv.ParseUint(bounds[0], 16, 64)
		end, err2 := strconv.ParseUint(bounds[1], 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			return nil, fmt.Errorf("maps line %q: bad range", sc.Text())
		}
		out = append(out, Range{Start: uintptr(start), End: uintptr(end)})
	}
	return out, sc.Err()
}

// Resident returns the RssFile and RssAnon lines' values (kB) from the text
// of /proc/<pid>/status; -1 when absent.
func Resident(status string) (file, anon int64) {
	file, anon = -1, -1
	for _, line := range strings.Split(status, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "RssFile":
			file = n
		case "RssAnon":
			anon = n
		}
	}
	return file, anon
}

// ReleaseHeap returns the Go heap's free pages to the operating system (a
// garbage collection, then every free page released) and reports RssAnon
// (kB) before and after (-1 where /proc is not there). Why: the pages
// start-up filled (the first lists of the API, decoding buffers) are free
// once it is over, but the runtime's background scavenger gives back only a
// little at a time and keeps dense chunks, so they would stay resident for
// good (bench/RESULTS.md, issue 28). The heap then grows back only to what
// the agent at rest uses.
func ReleaseHeap() (before, after int64) {
	_, before = selfResident()
	debug.FreeOSMemory()
	_, after = selfResident()
	return before, after
}

// selfResident is Resident of this process (-1, -1 without /proc).
func selfResident() (file, anon int64) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1, -1
	}
	return Resident(string(b))
}
