//go:build !linux

package storage

// allocate gives f size bytes with a (sparse) truncate: there is no
// portable fallocate.
func allocate(f File, size int64) error { return f.Truncate(size) }
