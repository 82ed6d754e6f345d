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
	return fillDir(n.dataDir)
}

// fillDir takes every free byte of the file system of dir with a ballast
// file in it.
func fillDir(dir string) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return err
	}
	free := int64(st.Bavail) * st.Bsize
	f, err := os.Create(filepath.Join(dir, ballast))
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

// The compose target's nodes have host directories of the harness's
// (docker-compose.chaos.yml): /fault, read-only, for the clock file, and,
// as root with disk-full selected, their data dir on a tmpfs of
// diskSize mounted here and owned by the image's user, which the
// harness fills from the host as for the subprocess target. The image is
// FROM scratch (no shell to fill anything from inside), and a Docker
// volume of type tmpfs would be unmounted, its data lost, whenever its
// container stops.

// composeUID is the image's USER (deploy/Dockerfile).
const composeUID = "65532"

func (t *composeTarget) faultDir(id int32) string {
	return filepath.Join(t.work, fmt.Sprintf("kb%d-fault", id))
}

func (t *composeTarget) nodeData(id int32) string {
	return filepath.Join(t.work, fmt.Sprintf("kb%d-data", id))
}

// prepareDirs makes the fault directories and, for disk-full, mounts the
// data tmpfs; it sets the overlay's variables.
func (t *composeTarget) prepareDirs() error {
	t.env = nil
	for _, id := range t.ids() {
		if err := os.MkdirAll(t.faultDir(id), 0o755); err != nil {
			return err
		}
		// The work dir is private (0700); the broker's user must reach
		// the file through it.
		if err := os.Chmod(t.work, 0o755); err != nil {
			return err
		}
		t.env = append(t.env, fmt.Sprintf("CHAOS_KB%d_FAULT=%s", id, t.faultDir(id)))
	}
	if !t.diskFull {
		return nil
	}
	for _, id := range t.ids() {
		dir := t.nodeData(id)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		opts := fmt.Sprintf("size=%s,uid=%s,gid=%s,mode=0755", diskSize, composeUID, composeUID)
		out, err := exec.Command("mount", "-t", "tmpfs", "-o", opts, "tmpfs", dir).CombinedOutput()
		if err != nil {
			t.diskErr = fmt.Sprintf("a size-limited disk per node needs a tmpfs mount, and this process cannot mount one (%v: %s); run as root",
				err, strings.TrimSpace(string(out)))
			t.unmountDisks()
			return nil
		}
		t.mounted[id] = true
	}
	for _, id := range t.ids() {
		t.env = append(t.env, fmt.Sprintf("CHAOS_KB%d_DATA=%s", id, t.nodeData(id)))
	}
	return nil
}

func (t *composeTarget) unmountDisks() {
	for id := range t.mounted {
		_ = exec.Command("umount", "-l", t.nodeData(id)).Run()
		delete(t.mounted, id)
	}
}

func (t *composeTarget) diskFullSupport() string {
	switch {
	case !t.diskFull:
		return "not selected"
	case t.diskErr != "":
		return t.diskErr
	}
	return ""
}

// fillDisk fills node id's tmpfs from the host. Docker must not restart
// the node when it stops by itself (restart: unless-stopped would make it
// fail again at once); restart() brings it back and the policy with it.
func (t *composeTarget) fillDisk(id int32) error {
	if !t.mounted[id] {
		return errors.New("disk-full: the node has no disk of its own")
	}
	if _, err := docker("docker", "update", "--restart=no", t.cont[id]); err != nil {
		return err
	}
	t.set(t.filled, id, true)
	return fillDir(t.nodeData(id))
}

// freeDisk gives node id's space back.
func (t *composeTarget) freeDisk(id int32) error {
	err := os.Remove(filepath.Join(t.nodeData(id), ballast))
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	t.set(t.filled, id, false)
	if _, uerr := docker("docker", "update", "--restart=unless-stopped", t.cont[id]); uerr != nil && err == nil {
		err = uerr
	}
	return err
}
