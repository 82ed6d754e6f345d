package storage

import (
	"errors"
	"syscall"
)

// allocate gives f size bytes: fallocate reserves the blocks, so appends
// into them cannot fail for lack of space; a file system without it
// (EOPNOTSUPP) gets a sparse truncate.
func allocate(f File, size int64) error {
	if a, ok := f.(interface{ allocate(int64) error }); ok {
		return a.allocate(size)
	}
	if fd, ok := f.(interface{ Fd() uintptr }); ok {
		err := syscall.Fallocate(int(fd.Fd()), 0, 0, size)
		if err == nil || !errors.Is(err, syscall.EOPNOTSUPP) && !errors.Is(err, syscall.ENOSYS) {
			return err
		}
	}
	return f.Truncate(size)
}
