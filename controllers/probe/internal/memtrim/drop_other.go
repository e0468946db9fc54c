//go:build !linux

package memtrim

// DropExecutablePages does nothing outside Linux.
func DropExecutablePages() (before, after int64, err error) { return -1, -1, nil }
