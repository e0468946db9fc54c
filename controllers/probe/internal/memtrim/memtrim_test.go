package memtrim

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadOnlyRanges(t *testing.T) {
	const exe = "/usr/local/bin/probe-agent"
	maps := `00400000-00eba000 r-xp 00000000 08:01 1234 /usr/local/bin/probe-agent
00eba000-01a9d000 r--p 00aba000 08:01 1234 /usr/local/bin/probe-agent
01a9d000-01b34000 rw-p 0169d000 08:01 1234 /usr/local/bin/probe-agent
01b34000-03b7c000 rw-p 00000000 00:00 0
7f0000000000-7f0000001000 r--p 00000000 08:01 99 /usr/lib/other.so
7ffd0000-7ffd1000 r-xp 00000000 00:00 0 [vdso]
`
	got, err := ReadOnlyRanges(maps, exe)
	require.NoError(t, err)
	assert.Equal(t, []Range{{0x400000, 0xeba000}, {0xeba000, 0x1a9d000}}, got,
		"the executable's code and read-only data; never its writable data, anonymous memory or another file")

	_, err = ReadOnlyRanges("zz r-xp 0 0 0 "+exe, exe)
	assert.Error(t, err, "a malformed line is an error, not a guess")
	got, err = ReadOnlyRanges("00400000-00eba000 r-xp 0 0 0 /a path/with space", "/a path/with space")
	require.NoError(t, err)
	assert.Len(t, got, 1, "a path with a space")
}

func TestResident(t *testing.T) {
	f, a := Resident("Name:\tx\nVmRSS:\t  30000 kB\nRssAnon:\t    9000 kB\nRssFile:\t   21000 kB\n")
	assert.Equal(t, int64(21000), f)
	assert.Equal(t, int64(9000), a)
	f, a = Resident("Name:\tx\n")
	assert.Equal(t, int64(-1), f)
	assert.Equal(t, int64(-1), a)
}

// Dropping the test binary's own executable pages lowers its RssFile, and
// the process goes on running (its code is mapped back as it runs: the
// assertions after the drop are that code).
func TestDropExecutablePages(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	before, after, err := DropExecutablePages()
	require.NoError(t, err)
	require.Positive(t, before)
	assert.Less(t, after, before, "RssFile %d kB → %d kB", before, after)
	t.Logf("RssFile %d kB → %d kB", before, after)
}

// garbage keeps the compiler from dropping the allocations of TestReleaseHeap.
var garbage [][]byte

// Freed heap pages go back to the system: after 32 MiB written and dropped, RssAnon falls by most of it.
func TestReleaseHeap(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	for i := 0; i < 32; i++ {
		b := make([]byte, 1<<20)
		for j := range b {
			b[j] = 1 // touched: resident
		}
		garbage = append(garbage, b)
	}
	garbage = nil
	before, after := ReleaseHeap()
	require.Positive(t, before)
	assert.Less(t, after, before-16<<10, "RssAnon %d kB → %d kB", before, after)
	t.Logf("RssAnon %d kB → %d kB", before, after)
}
