//go:build !linux

package logfs

// Allocate gives f size bytes with a (sparse) truncate: there is no
// portable fallocate.
func Allocate(f File, size int64) error { return f.Truncate(size) }
