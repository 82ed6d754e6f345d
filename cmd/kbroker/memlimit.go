package main

// GOMEMLIMIT from the container's memory limit: without it the Go
// garbage collector only paces on GOGC and a broker with a growing heap
// (request buffers, segment reads) is OOM-killed by the cgroup before it
// collects. A soft limit just under the cgroup's makes the collector work
// harder as the heap nears it instead.

import (
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// cgroupMemoryFiles hold the memory limit under cgroup v2 and v1.
var cgroupMemoryFiles = []string{
	"/sys/fs/cgroup/memory.max",
	"/sys/fs/cgroup/memory/memory.limit_in_bytes",
}

// memLimitFraction of the cgroup limit becomes the Go soft limit; the
// rest is headroom for memory the Go runtime does not count (page tables,
// thread stacks, cgo) and for the collector to catch up.
const memLimitFraction = 0.9

// setMemoryLimit sets the runtime's soft memory limit from the cgroup
// limit unless GOMEMLIMIT is set in env (the runtime honours it already).
func setMemoryLimit(env []string, logger *slog.Logger) {
	for _, kv := range env {
		if strings.HasPrefix(kv, "GOMEMLIMIT=") {
			return
		}
	}
	for _, f := range cgroupMemoryFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		limit, ok := parseCgroupMemoryLimit(string(b))
		if !ok {
			return // "max" or an absurd value: no limit to follow
		}
		soft := int64(float64(limit) * memLimitFraction)
		debug.SetMemoryLimit(soft)
		logger.Info("GOMEMLIMIT set from the cgroup memory limit", "cgroup_limit_bytes", limit, "gomemlimit_bytes", soft, "file", f)
		return
	}
}

// parseCgroupMemoryLimit reads a memory.max / memory.limit_in_bytes
// value. "max" (v2) and v1's page-rounded "unlimited" (close to 2^63)
// mean no limit.
func parseCgroupMemoryLimit(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	if s == "" || s == "max" {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v <= 0 || v >= 1<<62 {
		return 0, false
	}
	return v, true
}
