package storage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kbroker/kbroker/internal/wallclock"
	"github.com/kbroker/kbroker/storage/cleaner"
	"github.com/kbroker/kbroker/storage/integrity"
	"github.com/kbroker/kbroker/storage/logfs"
)

// cleanShutdownFile marks a directory whose logs were all closed cleanly.
const cleanShutdownFile = ".kafka_cleanshutdown"

// flushCheckInterval is how often Run looks for logs due a flush.ms flush.
const flushCheckInterval = 100 * time.Millisecond

// DefaultRetentionCheckInterval is Kafka's log.retention.check.interval.ms.
const DefaultRetentionCheckInterval = 5 * time.Minute

// Manager owns every partition log under a set of log directories.
// Lock order: Manager.mu before Log.mu.
type Manager struct {
	fs FS
	// files bounds the descriptors the logs hold (package logfs); fs
	// opens through it.
	files  *logfs.Cache
	logger *slog.Logger
	dirs   []*logDir
	// deletes holds deleted segments' files until their
	// file.delete.delay.ms passes (delete.go).
	deletes deleteQueue

	// dirFailed is signalled when a log directory goes offline, and
	// offlineDirs counts them (logdir_failure.go).
	dirFailed   chan struct{}
	offlineDirs atomic.Int32
	// corrupt collects the corrupt batches reads find; scrubber looks for
	// them (scrub.go).
	corrupt  *integrity.Reports
	scrubber *integrity.Scrubber

	mu struct {
		sync.Mutex
		logs   map[topicPartition]*Log
		closed bool
		// flushes is when each log with a flush.ms is next due
		// (manager_flush.go).
		flushes flushHeap
		// preferred is where AlterReplicaLogDirs asked a partition not
		// yet created to go (Kafka's preferred log dir).
		preferred map[topicPartition]*logDir
		// moving are the logs being moved to another directory (move.go).
		moving map[topicPartition]*logMove
		// retentionCheck is how often Run applies retention.
		retentionCheck time.Duration
		// checkpointEvery is how often Run writes the log start offset and
		// high watermark checkpoints that changed (Kafka's
		// replica.high.watermark.checkpoint.interval.ms).
		checkpointEvery time.Duration
		// cleanerBackoff is how often Run looks for logs to clean.
		cleanerBackoff time.Duration
		// cleanerDisabled is log.cleaner.enable=false.
		cleanerDisabled bool
		cleanerLimits   CleanerLimits
		// cleanerThreads is how many logs CleanLogs cleans at once
		// (log.cleaner.threads).
		cleanerThreads int
	}
	// cleanerThrottle is log.cleaner.io.max.bytes.per.second, shared by
	// the logs cleaned at once (cleaner_pool.go).
	cleanerThrottle *cleaner.Throttle
	// cleanerBackoffChanged wakes Run to re-arm its cleaner ticker.
	cleanerBackoffChanged chan struct{}
	// cleanerSleep replaces the throttle's sleep in tests.
	cleanerSleep func(d time.Duration, stop <-chan struct{})
}

// SetRetentionCheckInterval sets how often Run applies each log's
// retention.ms and retention.bytes (log.retention.check.interval.ms,
// DefaultRetentionCheckInterval unless set). It takes effect when Run
// starts.
func (m *Manager) SetRetentionCheckInterval(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if d > 0 {
		m.mu.retentionCheck = d
	}
}

// logDir is one log.dirs entry.
type logDir struct {
	path           string
	cleanPath      string                   // filepath.Clean(path), to match the paths of files
	clean          bool                     // the clean-shutdown marker was present at open
	recoveryPoints map[topicPartition]int64 // as checkpointed at the last flush or close
	// logStartOffsets and highWatermarks as last written to
	// logStartOffsetFile and highWatermarkFile.
	logStartOffsets offsetCheckpoint
	highWatermarks  offsetCheckpoint
	partitions      map[topicPartition]bool // partition directories present
	// futures are the partition directories of moves a crash
	// interrupted (<topic>-<partition>.<id>-future), resolved by
	// OpenManager (move.go).
	futures map[topicPartition]string
	// failure is why the directory went offline, nil while it is online
	// (logdir_failure.go).
	failure atomic.Pointer[dirFailure]
}

// OpenManager opens the log directories, creating them if missing, and
// notes whether the previous shutdown was clean. The clean-shutdown marker
// is removed so that a crash leaves it absent.
func OpenManager(dirs []string, logger *slog.Logger) (*Manager, error) {
	return OpenManagerFS(OSFS{}, dirs, logger)
}

// OpenManagerFS is OpenManager over fsys (tests inject faults this way).
func OpenManagerFS(fsys FS, dirs []string, logger *slog.Logger) (*Manager, error) {
	if len(dirs) == 0 {
		return nil, errors.New("storage: no log directories")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m := &Manager{logger: logger, dirFailed: make(chan struct{}, 1)}
	m.files = logfs.NewCache(fsys)
	m.fs = logfs.WatchFS(m.files.FS(), dirWatcher{m})
	m.mu.logs = make(map[topicPartition]*Log)
	m.mu.preferred = make(map[topicPartition]*logDir)
	m.mu.moving = make(map[topicPartition]*logMove)
	m.mu.retentionCheck = DefaultRetentionCheckInterval
	m.mu.checkpointEvery = 5 * time.Second
	m.mu.cleanerBackoff = DefaultCleanerBackoff
	m.mu.cleanerThreads = 1
	m.cleanerThrottle = cleaner.NewThrottle(math.MaxFloat64, time.Time{})
	m.cleanerBackoffChanged = make(chan struct{}, 1)
	m.corrupt = integrity.NewReports()
	m.scrubber = integrity.NewScrubber(m.scrubSegments, logger.With("component", "scrubber"))
	for _, path := range dirs {
		m.dirs = append(m.dirs, &logDir{path: path, cleanPath: filepath.Clean(path),
			partitions: map[topicPartition]bool{}, recoveryPoints: map[topicPartition]int64{},
			futures:         map[topicPartition]string{},
			logStartOffsets: offsetCheckpoint{offsets: map[topicPartition]int64{}},
			highWatermarks:  offsetCheckpoint{offsets: map[topicPartition]int64{}}})
	}
	for _, d := range m.dirs {
		if err := openLogDir(m.fs, d, logger); err != nil {
			// A directory that cannot be opened at start stops the
			// broker: its partitions would otherwise be created afresh
			// in another directory.
			return nil, err
		}
	}
	m.resolveFutures()
	return m, nil
}

func openLogDir(fsys FS, d *logDir, logger *slog.Logger) error {
	path := d.path
	if err := fsys.MkdirAll(path, DirPerm); err != nil {
		return fmt.Errorf("%w: create log dir %s: %v", ErrStorage, path, err)
	}
	marker := filepath.Join(path, cleanShutdownFile)
	switch err := fsys.Remove(marker); {
	case err == nil:
		d.clean = true
		if err := fsys.SyncDir(path); err != nil {
			return fmt.Errorf("%w: %v", ErrStorage, err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%w: remove %s: %v", ErrStorage, marker, err)
	}
	if data, err := logfs.ReadFile(fsys, filepath.Join(path, recoveryPointFile)); err == nil {
		rp, err := decodeCheckpoint(data)
		switch {
		case errors.Is(err, ErrNewerFormat):
			return fmt.Errorf("%s: %w", filepath.Join(path, recoveryPointFile), err)
		case err == nil:
			d.recoveryPoints = rp
		default:
			logger.Warn("ignoring bad recovery point checkpoint", "dir", path, "err", err)
		}
	}
	for _, c := range []struct {
		file string
		into *offsetCheckpoint
	}{{logStartOffsetFile, &d.logStartOffsets}, {highWatermarkFile, &d.highWatermarks}} {
		if data, err := logfs.ReadFile(fsys, filepath.Join(path, c.file)); err == nil {
			offs, err := decodeCheckpoint(data)
			switch {
			case errors.Is(err, ErrNewerFormat):
				return fmt.Errorf("%s: %w", filepath.Join(path, c.file), err)
			case err == nil:
				c.into.offsets = offs
			default:
				logger.Warn("ignoring bad checkpoint", "file", c.file, "dir", path, "err", err)
			}
		}
	}
	ents, err := fsys.ReadDir(path)
	if err != nil {
		return fmt.Errorf("%w: list %s: %v", ErrStorage, path, err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), deleteDirSuffix) && e.IsDir() {
			// A deleted partition whose delay had not passed when the
			// broker stopped: nothing reads it any more.
			if err := fsys.RemoveAll(filepath.Join(path, e.Name())); err != nil {
				logger.Warn("cannot remove deleted partition", "dir", path, "partition_dir", e.Name(), "err", err)
			}
			continue
		}
		if tp, ok := parseFutureDirName(e.Name()); ok && e.IsDir() {
			d.futures[tp] = filepath.Join(path, e.Name())
			continue
		}
		if tp, ok := parseDirName(e.Name()); ok && e.IsDir() {
			d.partitions[tp] = true
		}
	}
	logger.Info("opened log dir", "dir", path, "clean_shutdown", d.clean, "partitions", len(d.partitions))
	return nil
}

// HostedPartitions is how many partition directories the log dirs held
// when the Manager opened them (open or not yet), for the broker's
// capacity check at start.
func (m *Manager) HostedPartitions() int {
	n := 0
	for _, d := range m.dirs {
		n += len(d.partitions)
	}
	return n
}

// GetOrCreate opens (recovering if needed) or creates the log of a
// partition. A new partition goes to the directory holding the fewest.
// It neither reads nor writes the partition's topic id (GetOrCreateTopic
// does).
func (m *Manager) GetOrCreate(topic string, partition int32, cfg LogConfig) (*Log, error) {
	return m.getOrCreate(topic, partition, nil, false, cfg)
}

// GetOrCreateTopic is GetOrCreate for a partition of the topic whose id
// is topicID. A new log gets topicID in its partition.metadata
// (partition_metadata.go) before it is used. An existing log whose
// partition.metadata holds another id belongs to an older topic of that
// name (deleted, then created again while this broker was down): with
// current set, which says topicID comes from metadata known to be caught
// up, that stale log is deleted as Delete does and an empty log created in
// its place; without it the log is refused with ErrInconsistentTopicID and
// left alone (the metadata may be the stale side). An existing log without
// partition.metadata (written before kbroker kept topic ids) is adopted
// and gets the file when current is set, and is refused likewise
// otherwise (it may be a newer topic's than topicID). An unparsable file
// is ErrBadPartitionMetadata.
func (m *Manager) GetOrCreateTopic(topic string, partition int32, topicID [16]byte, current bool, cfg LogConfig) (*Log, error) {
	if topicID == ([16]byte{}) {
		return nil, fmt.Errorf("storage: open partition %s-%d: zero topic id", topic, partition)
	}
	return m.getOrCreate(topic, partition, &topicID, current, cfg)
}

func (m *Manager) getOrCreate(topic string, partition int32, topicID *[16]byte, current bool, cfg LogConfig) (*Log, error) {
	tp := topicPartition{topic, partition}
	if topic == "" || partition < 0 || filepath.Base(topic) != topic || topic == "." || topic == ".." {
		return nil, fmt.Errorf("storage: bad topic partition %q %d", topic, partition)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.closed {
		return nil, ErrClosed
	}
	if l, ok := m.mu.logs[tp]; ok {
		return l, nil
	}
	d := m.dirOfPartitionLocked(tp)
	// writeID: the log gets partition.metadata once open (an adopted
	// log written before kbroker kept topic ids).
	writeID := false
	if d != nil && d.offline() == nil && topicID != nil {
		path := filepath.Join(d.path, tp.dirName())
		id, found, err := readPartitionMetadata(m.fs, path)
		switch {
		case err != nil:
			return nil, fmt.Errorf("storage: open partition %s-%d: %w", topic, partition, err)
		case !found && !current:
			return nil, fmt.Errorf("storage: open partition %s-%d: %w: %s has no %s, and topic id %s is not known current",
				topic, partition, ErrInconsistentTopicID, path, partitionMetadataFile, TopicIDString(*topicID))
		case !found:
			writeID = true
			m.logger.Info("adopting a log without partition.metadata (written before kbroker kept topic ids)",
				"dir", path, "topic_id", TopicIDString(*topicID))
		case id != *topicID && !current:
			return nil, fmt.Errorf("storage: open partition %s-%d: %w: %s holds topic id %s, not %s",
				topic, partition, ErrInconsistentTopicID, path, TopicIDString(id), TopicIDString(*topicID))
		case id != *topicID:
			m.logger.Warn("deleting the stale log of an older topic of the same name; the partition starts empty",
				"dir", path, "stale_topic_id", TopicIDString(id), "topic_id", TopicIDString(*topicID))
			if err := m.deleteLocked(tp); err != nil {
				return nil, fmt.Errorf("storage: open partition %s-%d: deleting the stale log: %w", topic, partition, err)
			}
			d = nil
		}
	}
	created := d == nil // no directory of it in any log dir yet
	if d == nil {
		// The directory AlterReplicaLogDirs asked for, else the one
		// holding the fewest partitions; never an offline one.
		if p := m.mu.preferred[tp]; p != nil && p.offline() == nil {
			d = p
		} else {
			for _, c := range m.dirs {
				if c.offline() == nil && (d == nil || len(c.partitions) < len(d.partitions)) {
					d = c
				}
			}
		}
		if d == nil {
			d = m.dirs[0] // every directory is offline: refused below
		}
	}
	if err := d.offline(); err != nil {
		return nil, fmt.Errorf("open partition %s-%d in %s: %w (%v)", topic, partition, d.path, ErrLogDirOffline, err)
	}
	dir := filepath.Join(d.path, tp.dirName())
	// removeNew leaves no directory of a new partition that could not be
	// opened: the next start would load it as a partition of this broker,
	// and a deleted topic's replica would stay an orphan. An existing
	// partition's data is kept.
	removeNew := func(err error) error {
		if created {
			if rerr := m.fs.RemoveAll(dir); rerr != nil {
				err = errors.Join(err, fmt.Errorf("removing the directory of new partition %s-%d: %w", topic, partition, rerr))
			}
		}
		return fmt.Errorf("storage: open partition %s-%d: %w", topic, partition, err)
	}
	if created && topicID != nil {
		// The id is on disk before the log's first segment: a crash
		// leaves no log of this topic without it (an empty directory at
		// worst, adopted empty).
		if err := m.fs.MkdirAll(dir, DirPerm); err != nil {
			return nil, removeNew(fmt.Errorf("%w: create %s: %w", ErrStorage, dir, err))
		}
		if err := writePartitionMetadata(m.fs, dir, *topicID); err != nil {
			return nil, removeNew(err)
		}
	}
	rp, haveRP := d.recoveryPoints[tp]
	if !haveRP {
		rp = 0
	}
	l, err := OpenLog(dir, cfg, LogOptions{
		FS:             m.fs,
		Logger:         m.logger.With("topic", topic, "partition", partition),
		Clean:          d.clean,
		RecoveryPoint:  rp,
		LogStartOffset: d.logStartOffsets.offsets[tp],
		HighWatermark:  d.highWatermarks.offsets[tp],
		DeleteLater:    m.deletes.add,
		Corrupt:        m.corrupt,
		DirGone:        dirWatcher{m}.Gone(dir),
	})
	if err != nil {
		return nil, removeNew(err)
	}
	if writeID {
		if err := writePartitionMetadata(m.fs, dir, *topicID); err != nil {
			if cerr := l.Close(); cerr != nil {
				err = errors.Join(err, cerr)
			}
			return nil, fmt.Errorf("storage: open partition %s-%d: %w", topic, partition, err)
		}
	}
	d.partitions[tp] = true
	delete(m.mu.preferred, tp)
	m.mu.logs[tp] = l
	l.onFlushConfig = func() { m.flushConfigChanged(tp, l) }
	m.scheduleFlushLocked(tp, l)
	return l, nil
}

// Get returns an open log.
func (m *Manager) Get(topic string, partition int32) (*Log, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.mu.logs[topicPartition{topic, partition}]
	return l, ok
}

// Delete closes a partition's log and removes its directory. With a
// file.delete.delay.ms (the log's, or the default for a log not open), the
// directory is first renamed <topic>-<partition>.<unique id>-delete and
// removed after the delay, as Kafka's asyncDelete: the name is free at
// once for a topic created again, readers holding files can finish, and
// the next open removes a leftover (openLogDir).
func (m *Manager) Delete(topic string, partition int32) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.deleteLocked(topicPartition{topic, partition})
}

func (m *Manager) deleteLocked(tp topicPartition) error {
	var path string
	delayMs := DefaultLogConfig().FileDeleteDelayMs
	delete(m.mu.preferred, tp)
	m.abortMoveLocked(tp)
	if l, ok := m.mu.logs[tp]; ok {
		delete(m.mu.logs, tp)
		delayMs = l.config().FileDeleteDelayMs
		if err := l.Close(); err != nil {
			m.logger.Warn("closing deleted log", "dir", l.Dir(), "err", err)
		}
		path = l.Dir()
	}
	for _, d := range m.dirs {
		if d.partitions[tp] {
			path = filepath.Join(d.path, tp.dirName())
			delete(d.partitions, tp)
			delete(d.recoveryPoints, tp)
			delete(d.logStartOffsets.offsets, tp)
			delete(d.highWatermarks.offsets, tp)
			if err := updateCleanerCheckpoint(m.fs, d.path, tp, -1); err != nil {
				m.logger.Warn("removing cleaner checkpoint entry", "dir", d.path, "err", err)
			}
		}
	}
	if path == "" {
		return nil
	}
	if delayMs > 0 {
		renamed := path + "." + uniqueID() + deleteDirSuffix
		switch err := m.fs.Rename(path, renamed); {
		case err == nil:
			if err := m.fs.SyncDir(filepath.Dir(path)); err != nil {
				m.logger.Warn("syncing log dir after renaming a deleted partition", "dir", path, "err", err)
			}
			m.deletes.addDir(renamed, time.Now().Add(time.Duration(delayMs)*time.Millisecond))
			return nil
		case errors.Is(err, os.ErrNotExist):
			return nil
		default:
			m.logger.Warn("renaming deleted partition, removing it now", "dir", path, "err", err)
		}
	}
	if err := m.fs.RemoveAll(path); err != nil {
		return fmt.Errorf("%w: delete %s: %v", ErrStorage, path, err)
	}
	return nil
}

// Run flushes logs whose flush.ms has passed and checkpoints recovery
// points, until ctx is done. It is the only goroutine of the package; the
// caller starts it and stops it by cancelling ctx. It runs the scrubber
// on a goroutine of its own, which it waits for.
func (m *Manager) Run(ctx context.Context) {
	var scrub sync.WaitGroup
	defer scrub.Wait()
	scrub.Go(func() { m.scrubber.Run(ctx) })
	m.mu.Lock()
	every, cpEvery, cleanEvery := m.mu.retentionCheck, m.mu.checkpointEvery, m.mu.cleanerBackoff
	m.mu.Unlock()
	clt := time.NewTicker(cleanEvery)
	defer clt.Stop()
	ct := time.NewTicker(cpEvery)
	defer ct.Stop()
	t := time.NewTicker(flushCheckInterval)
	defer t.Stop()
	rt := time.NewTicker(every)
	defer rt.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			m.flushDue(now)
			m.DeleteDue(now)
		case <-rt.C:
			// retention.ms compares record timestamps with the time of day.
			m.applyRetention(wallclock.Now())
		case <-ct.C:
			m.checkpointOffsets()
		case <-m.cleanerBackoffChanged:
			m.mu.Lock()
			clt.Reset(m.mu.cleanerBackoff)
			m.mu.Unlock()
		case <-clt.C:
			m.mu.Lock()
			disabled := m.mu.cleanerDisabled
			m.mu.Unlock()
			if !disabled {
				// The compaction lags and delete.retention.ms compare
				// record timestamps with the time of day.
				m.CleanLogs(ctx, wallclock.Now())
			}
		}
	}
}

// checkpointOffsets writes the log start offset and high watermark
// checkpoints that changed.
func (m *Manager) checkpointOffsets() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.closed {
		return
	}
	if err := m.checkpointOffsetsAllLocked(false); err != nil {
		m.logger.Error("offset checkpoint failed", "err", err)
	}
}

// applyRetention applies every log's retention settings and checkpoints
// log start offsets that moved.
func (m *Manager) applyRetention(now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.closed {
		return
	}
	for _, l := range m.mu.logs {
		if n, err := l.ApplyRetention(now, l.config().RetentionMs, l.config().RetentionBytes); err != nil {
			m.logger.Error("retention failed", "dir", l.Dir(), "err", err)
		} else if n > 0 {
			m.logger.Info("retention deleted segments", "dir", l.Dir(), "segments", n)
		}
	}
	if err := m.checkpointOffsetsAllLocked(false); err != nil {
		m.logger.Error("log start offset checkpoint failed", "err", err)
	}
}

// offsetCheckpoint is one per-directory offset checkpoint file as last
// written.
type offsetCheckpoint struct {
	offsets map[topicPartition]int64
	dirty   bool // the last write failed: retry
}

// checkpointOffsetsAllLocked writes logStartOffsetFile and
// highWatermarkFile in each directory where an offset moved (all of them
// with force).
func (m *Manager) checkpointOffsetsAllLocked(force bool) error {
	return errors.Join(
		m.checkpointOffsetsLocked(logStartOffsetFile, (*Log).LogStartOffset,
			func(d *logDir) *offsetCheckpoint { return &d.logStartOffsets }, force),
		m.checkpointOffsetsLocked(highWatermarkFile, (*Log).HighWatermarkCheckpoint,
			func(d *logDir) *offsetCheckpoint { return &d.highWatermarks }, force))
}

func (m *Manager) checkpointOffsetsLocked(file string, get func(*Log) int64, cp func(*logDir) *offsetCheckpoint, force bool) error {
	changed := map[*logDir]bool{}
	for tp, l := range m.mu.logs {
		off := get(l)
		for _, d := range m.dirs {
			if c := cp(d); d.partitions[tp] {
				if old, ok := c.offsets[tp]; !ok || old != off {
					c.offsets[tp] = off
					changed[d] = true
				}
			}
		}
	}
	var errs []error
	for _, d := range m.dirs {
		c := cp(d)
		if d.offline() != nil || !force && !changed[d] && !c.dirty {
			continue
		}
		if err := logfs.WriteFileAtomic(m.fs, d.path, filepath.Join(d.path, file), encodeCheckpoint(c.offsets)); err != nil {
			errs = append(errs, fmt.Errorf("%w: %s in %s: %v", ErrStorage, file, d.path, err))
			c.dirty = true
			continue
		}
		c.dirty = false
	}
	return errors.Join(errs...)
}

// checkpointLocked writes every directory's recovery points.
func (m *Manager) checkpointLocked() error {
	for tp, l := range m.mu.logs {
		for _, d := range m.dirs {
			if d.partitions[tp] {
				d.recoveryPoints[tp] = l.RecoveryPoint()
			}
		}
	}
	var errs []error
	for _, d := range m.dirs {
		if d.offline() != nil {
			continue
		}
		err := logfs.WriteFileAtomic(m.fs, d.path, filepath.Join(d.path, recoveryPointFile), encodeCheckpoint(d.recoveryPoints))
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: checkpoint %s: %v", ErrStorage, d.path, err))
		}
	}
	return errors.Join(errs...)
}

// Close flushes and closes every log (each writes its producer snapshot),
// checkpoints recovery points, and then writes the clean-shutdown marker
// in each directory whose logs all closed without error.
func (m *Manager) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.closed {
		return ErrClosed
	}
	m.mu.closed = true
	var errs []error
	failedDirs := map[string]bool{}
	if err := m.checkpointOffsetsAllLocked(true); err != nil {
		errs = append(errs, err)
	}
	for tp, l := range m.mu.logs {
		if d := m.dirOfPartitionLocked(tp); d != nil && d.offline() != nil {
			l.abandon(ErrLogDirOffline)
			continue
		}
		err := l.Close()
		for _, d := range m.dirs {
			if d.partitions[tp] {
				d.recoveryPoints[tp] = l.RecoveryPoint()
				if err != nil {
					failedDirs[d.path] = true
				}
			}
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, d := range m.dirs {
		if d.offline() != nil {
			// Nothing more is written to a failed disk; the next
			// start recovers its logs.
			continue
		}
		err := logfs.WriteFileAtomic(m.fs, d.path, filepath.Join(d.path, recoveryPointFile), encodeCheckpoint(d.recoveryPoints))
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: checkpoint %s: %v", ErrStorage, d.path, err))
			continue
		}
		if failedDirs[d.path] {
			continue
		}
		if !d.clean && !m.allOpenLocked(d) {
			// A partition never opened since a crash is still unrecovered.
			continue
		}
		if err := logfs.WriteFileAtomic(m.fs, d.path, filepath.Join(d.path, cleanShutdownFile), nil); err != nil {
			errs = append(errs, fmt.Errorf("%w: clean-shutdown marker in %s: %v", ErrStorage, d.path, err))
		}
	}
	return errors.Join(errs...)
}

// allOpenLocked reports whether every partition in d was opened (and so
// recovered) by this manager.
func (m *Manager) allOpenLocked(d *logDir) bool {
	for tp := range d.partitions {
		if _, ok := m.mu.logs[tp]; !ok {
			return false
		}
	}
	return true
}
