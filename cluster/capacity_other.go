//go:build !unix

package cluster

// fileLimit reports no limit where RLIMIT_NOFILE does not exist.
func fileLimit() (uint64, error) { return 0, nil }
