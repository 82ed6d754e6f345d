package storage

import (
	"errors"
	"os"
	"sort"
	"sync"
	"time"
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
	logFile := fileName(l.dir, base, logSuffix) + deletedSuffix
	others := []string{fileName(l.dir, base, indexSuffix), fileName(l.dir, base, timeIndexSuffix), fileName(l.dir, base, txnIndexSuffix)}
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

// pendingDelete is a deleted segment's files, removed at due.
type pendingDelete struct {
	files []string
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

// DeleteDue removes the files of deleted segments whose
// file.delete.delay.ms has passed at now, and returns how many files it
// removed. Run calls it every 100 ms; tests call it with a fake clock.
func (m *Manager) DeleteDue(now time.Time) int {
	removed := 0
	for _, p := range m.deletes.due(now) {
		for _, name := range p.files {
			if err := m.fs.Remove(name); err != nil {
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
