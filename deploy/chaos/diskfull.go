package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// The disk-full nemesis fills a node's data disk. Each subprocess node
// then keeps its data on a tmpfs of its own (mounting one needs root);
// filling it leaves no free byte: the node's log dir goes offline and
// its Raft log write fails, so the node stops, as a Kafka node stops when
// its only log dir and its metadata log dir fail. Freeing the space and
// restarting it brings it back; the checks hold throughout.

// diskSize is each node's tmpfs: room for a long run's data, and what
// filling one takes from memory for the fault's length.
const diskSize = "512m"

// ballast is the file that fills a node's disk.
const ballast = "chaos-ballast"

// mountDisks gives every node a tmpfs at its data dir, or says why not.
func (t *procTarget) mountDisks() {
	t.diskErr = ""
	for _, n := range t.nodes {
		if err := os.MkdirAll(n.dataDir, 0o755); err != nil {
			t.diskErr = err.Error()
			return
		}
		out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+diskSize, "tmpfs", n.dataDir).CombinedOutput()
		if err != nil {
			t.diskErr = fmt.Sprintf("a size-limited disk per node needs a tmpfs mount, and this process cannot mount one (%v: %s); run as root",
				err, strings.TrimSpace(string(out)))
			t.unmountDisks()
			return
		}
		n.mounted = true
	}
}

func (t *procTarget) unmountDisks() {
	for _, n := range t.nodes {
		if n.mounted {
			_ = exec.Command("umount", "-l", n.dataDir).Run()
			n.mounted = false
		}
	}
}

func (t *procTarget) diskFullSupport() string {
	switch {
	case !t.diskFull:
		return "not selected"
	case t.diskErr != "":
		return t.diskErr
	}
	return ""
}

// fillDisk takes every free byte of node id's tmpfs. The node will stop
// by itself: that exit is expected.
func (t *procTarget) fillDisk(id int32) error {
	n := t.node(id)
	if !n.mounted {
		return errors.New("disk-full: the node has no disk of its own")
	}
	n.mu.Lock()
	n.expectExit = true
	n.mu.Unlock()
	var st syscall.Statfs_t
	if err := syscall.Statfs(n.dataDir, &st); err != nil {
		return err
	}
	free := int64(st.Bavail) * st.Bsize
	f, err := os.Create(filepath.Join(n.dataDir, ballast))
	if err != nil {
		return err
	}
	defer f.Close()
	// tmpfs refuses to allocate its last few pages in one call: take all
	// but a little at once, then the rest a page at a time until ENOSPC.
	const tail = 1 << 20
	if free > tail {
		if err := syscall.Fallocate(int(f.Fd()), 0, 0, free-tail); err != nil {
			return fmt.Errorf("disk-full: allocating %d bytes: %w", free-tail, err)
		}
	}
	page := make([]byte, 4096)
	for range tail / len(page) * 2 {
		if _, err := f.Write(page); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return nil
			}
			return fmt.Errorf("disk-full: %w", err)
		}
	}
	return nil
}

// freeDisk gives node id's space back.
func (t *procTarget) freeDisk(id int32) error {
	err := os.Remove(filepath.Join(t.node(id).dataDir, ballast))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

func (t *composeTarget) diskFullSupport() string {
	return "the compose nodes' volumes have no size limit; the subprocess target (as root) mounts a tmpfs per node"
}
func (t *composeTarget) fillDisk(int32) error {
	return errors.New("disk-full: not supported for compose")
}
func (t *composeTarget) freeDisk(int32) error { return nil }
