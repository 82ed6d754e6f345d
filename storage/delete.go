package storage

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/kbroker/kbroker/storage/logfs"
)

// removeSegmentFiles finishes the deletion of the segment at base, whose
// .log the caller renamed to .log.deleted (the crash-safe commit point).
// With file.delete.delay.ms and a DeleteLater hook, the index and time
// index are renamed .deleted too and all three files are handed over for
// removal after the delay, as Kafka's asyncDeleteSegment: readers that
// opened the files before the deletion can finish (Kafka's reason), and an
// operator sees what went. Otherwise the files are removed now. Failures
// are logged: the segment is already gone from the log, and open removes
// any .deleted file left behind.
func (l *Log) removeSegmentFiles(base int64) {
	logFile := logfs.FileName(l.Dir(), base, logfs.LogSuffix) + deletedSuffix
	others := []string{logfs.FileName(l.Dir(), base, logfs.IndexSuffix), logfs.FileName(l.Dir(), base, logfs.TimeIndexSuffix), logfs.FileName(l.Dir(), base, logfs.TxnIndexSuffix)}
	delay := time.Duration(l.config().FileDeleteDelayMs) * time.Millisecond
	if l.deleteLater != nil && delay > 0 {
		files := []string{logFile}
		for _, name := range others {
			if err := l.fs.Rename(name, name+deletedSuffix); err != nil {
				if !errors.Is(err, os.ErrNotExist) {
					l.logger.Warn("renaming deleted segment file", "file", name, "err", err)
				}
				continue
			}
			files = append(files, name+deletedSuffix)
		}
		l.deleteLater(files, l.now().Add(delay))
		return
	}
	for _, name := range append(others, logFile) {
		if err := l.fs.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
			l.logger.Warn("removing deleted segment file", "file", name, "err", err)
		}
	}
}

// deleteDirSuffix ends the name a deleted partition's directory is
// renamed to (<topic>-<partition>.<unique id>-delete, Kafka's).
const deleteDirSuffix = "-delete"

// uniqueID is the unique part of a deleted partition directory's name: a
// random UUID without dashes, as Kafka writes it.
func uniqueID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// pendingDelete is a deleted segment's files, or a deleted partition's
// directory (dir), removed at due.
type pendingDelete struct {
	files []string
	dir   bool
	due   time.Time
}

// deleteQueue holds the files of segments deleted with a
// file.delete.delay.ms, until Manager.Run (or DeleteDue) removes them.
type deleteQueue struct {
	mu      sync.Mutex
	pending []pendingDelete
}

func (q *deleteQueue) add(files []string, at time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pending = append(q.pending, pendingDelete{files: files, due: at})
}

func (q *deleteQueue) addDir(dir string, at time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pending = append(q.pending, pendingDelete{files: []string{dir}, dir: true, due: at})
}

// due takes the entries due at now.
func (q *deleteQueue) due(now time.Time) []pendingDelete {
	q.mu.Lock()
	defer q.mu.Unlock()
	sort.SliceStable(q.pending, func(i, j int) bool { return q.pending[i].due.Before(q.pending[j].due) })
	n := 0
	for n < len(q.pending) && !q.pending[n].due.After(now) {
		n++
	}
	out := append([]pendingDelete(nil), q.pending[:n]...)
	q.pending = append(q.pending[:0], q.pending[n:]...)
	return out
}

// DeleteDue removes the files of deleted segments, and the directories of
// deleted partitions, whose file.delete.delay.ms has passed at now, and
// returns how many files and directories it removed. Run calls it every 100 ms; tests call it with a fake clock.
func (m *Manager) DeleteDue(now time.Time) int {
	removed := 0
	for _, p := range m.deletes.due(now) {
		for _, name := range p.files {
			remove := m.fs.Remove
			if p.dir {
				remove = m.fs.RemoveAll
			}
			if err := remove(name); err != nil {
				if !errors.Is(err, os.ErrNotExist) {
					m.logger.Warn("removing deleted segment file", "file", name, "err", err)
				}
				continue
			}
			removed++
		}
	}
	return removed
}
