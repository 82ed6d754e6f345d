//go:build unix

package cluster

import (
	"fmt"
	"syscall"
)

// fileLimit is the process's soft RLIMIT_NOFILE; 0 if unlimited.
func fileLimit() (uint64, error) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, fmt.Errorf("getrlimit RLIMIT_NOFILE: %w", err)
	}
	if rl.Cur == ^uint64(0) { // RLIM_INFINITY
		return 0, nil
	}
	return rl.Cur, nil
}
