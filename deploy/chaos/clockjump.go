package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// The clock-jump nemesis steps one node's wall clock forwards or
// backwards while the other nodes keep the host's, holds it there, then
// steps it back. The host's clock is shared by every process and must not
// be stepped; time namespaces shift only the monotonic and boot clocks
// (not CLOCK_REALTIME); libfaketime cannot reach a Go binary, which reads
// the time through the vDSO without libc. So each node runs with the
// broker's test-only `--fault-clock-file`: the harness writes the offset
// into that file and sends SIGUSR2, and every read of the time of day in
// the broker (internal/wallclock) moves by it, while the durations it
// measures on the monotonic clock do not.

// Jump sizes. Forwards up to hours; backwards at most 50 minutes: a
// broker more than message.timestamp.after.max.ms (1 hour by default)
// behind its producers rightly refuses their CreateTime records with
// INVALID_TIMESTAMP, which would test that setting rather than the
// cluster's consistency.
const (
	clockJumpMin     = 2 * time.Minute
	clockJumpMaxFwd  = 6 * time.Hour
	clockJumpMaxBack = 50 * time.Minute
)

// writeClock writes offset to path for the broker to read.
func writeClock(path string, offset time.Duration) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(offset.String()+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func (t *procTarget) clockJumpSupport() string { return "" }

func (t *procTarget) jumpClock(id int32, offset time.Duration) error {
	n := t.node(id)
	if err := writeClock(n.clockFile, offset); err != nil {
		return fmt.Errorf("clock-jump: %w", err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if isClosed(n.done) {
		return nil // it reads the file when it starts again
	}
	// A stopped (paused) process takes the signal when it resumes.
	if err := n.cmd.Process.Signal(syscall.SIGUSR2); err != nil {
		return fmt.Errorf("clock-jump: signal node %d: %w", id, err)
	}
	return nil
}

func (t *composeTarget) clockJumpSupport() string { return "" }

// jumpClock writes the offset into the node's fault directory, a host
// directory bind-mounted read-only into its container at /fault
// (docker-compose.chaos.yml), and sends SIGUSR2 with docker kill.
func (t *composeTarget) jumpClock(id int32, offset time.Duration) error {
	if err := writeClock(filepath.Join(t.faultDir(id), "clock"), offset); err != nil {
		return fmt.Errorf("clock-jump: %w", err)
	}
	t.mu.Lock()
	down, paused := t.down[id], t.paused[id]
	t.mu.Unlock()
	if down || paused {
		// It reads the file when it starts again; docker refuses to
		// signal a paused container, so resume signals it.
		return nil
	}
	if _, err := docker("docker", "kill", "-s", "USR2", t.cont[id]); err != nil {
		return fmt.Errorf("clock-jump: %w", err)
	}
	return nil
}
