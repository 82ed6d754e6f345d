package logfs

import (
	"errors"
	"syscall"
)

// Allocate gives f size bytes: fallocate reserves the blocks, so appends
// into them cannot fail for lack of space; a file system without it
// (EOPNOTSUPP) gets a sparse truncate. A wrapper of a File reaches the
// descriptor by being an Allocator.
func Allocate(f File, size int64) error {
	if a, ok := f.(Allocator); ok {
		return a.Allocate(size)
	}
	if fd, ok := f.(interface{ Fd() uintptr }); ok {
		err := syscall.Fallocate(int(fd.Fd()), 0, 0, size)
		if err == nil || !errors.Is(err, syscall.EOPNOTSUPP) && !errors.Is(err, syscall.ENOSYS) {
			return err
		}
	}
	return f.Truncate(size)
}
