package bench

// CPU accounting for "kbroker bench": the CPU time the nodes and this
// process (the clients, and kfake when it is the target) spend per record.
// Unlike records/s, CPU per record changes little when other work shares
// the machine, so it is the figure to compare between runs on a busy host.

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times: 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// cpuSample is the CPU time used so far by this process and by each node.
type cpuSample struct {
	self  time.Duration
	nodes time.Duration
}

// sampleCPU reads this process's rusage and the nodes' /proc stat; a node
// that is not running counts zero.
func (c *benchCluster) sampleCPU() cpuSample {
	var s cpuSample
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if c == nil {
		return s
	}
	for _, n := range c.nodes {
		n.mu.Lock()
		cmd := n.cmd
		n.mu.Unlock()
		if cmd == nil || cmd.Process == nil {
			continue
		}
		if d, err := procCPU(cmd.Process.Pid); err == nil {
			s.nodes += d
		}
	}
	return s
}

// procCPU is utime+stime of pid from /proc/<pid>/stat.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces: count from the ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: times %q %q", pid, f[11], f[12])
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// perRecord is the CPU time between two samples per record, in µs.
func perRecord(before, after time.Duration, records int64) float64 {
	if records <= 0 {
		return 0
	}
	return float64((after - before).Microseconds()) / float64(records)
}
