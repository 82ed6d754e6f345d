package storage

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// cleanCandidate is a compacted log and how much it needs cleaning.
type cleanCandidate struct {
	l      *Log
	ratio  float64 // dirty bytes over inactive bytes, as DirtyRatio
	forced bool    // its oldest dirty record passed max.compaction.lag.ms
}

// cleanability returns DirtyRatio's ratio and whether the log must be
// cleaned now whatever its ratio: it has cleanable dirty bytes whose
// first batch is older than max.compaction.lag.ms (Kafka's
// needCompactionNow, KIP-354).
func (l *Log) cleanability(now time.Time) (cleanCandidate, error) {
	c := cleanCandidate{l: l}
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	l.mu.RLock()
	if err := l.writableLocked(); err != nil {
		l.mu.RUnlock()
		return c, fmt.Errorf("cleanability %s: %w", l.Dir(), err)
	}
	p := l.planLocked(now)
	first := make([]int64, len(p.segs)) // each segment's first batch timestamp
	for i, cs := range p.segs {
		first[i] = cs.s.firstTimestamp
	}
	l.mu.RUnlock()
	if p.inactiveBytes == 0 {
		return c, nil
	}
	firstDirty := l.firstDirtyLocked(p.logStart, p.logEnd, p.generation)
	var dirty int64
	oldest := int64(-1)
	for i, cs := range p.segs {
		if cs.end <= firstDirty {
			continue
		}
		dirty += cs.size
		if oldest < 0 && cs.size > 0 {
			oldest = first[i]
			if oldest < 0 {
				oldest = cs.maxTimestamp
			}
		}
	}
	c.ratio = float64(dirty) / float64(p.inactiveBytes)
	if lag := l.config().MaxCompactionLagMs; dirty > 0 && lag < math.MaxInt64 && oldest >= 0 {
		c.forced = now.UnixMilli()-oldest > lag
	}
	return c, nil
}

// cleanOrder returns the candidates worth cleaning now, dirtiest first
// (Kafka's grabFilthiestCompactedLog, applied one log after another): a
// log whose max.compaction.lag.ms has passed, or whose dirty ratio
// reaches its min.cleanable.dirty.ratio.
func cleanOrder(cands []cleanCandidate) []cleanCandidate {
	out := cands[:0]
	for _, c := range cands {
		if c.ratio > 0 && (c.forced || c.ratio >= c.l.config().MinCleanableDirtyRatio) {
			out = append(out, c)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ratio > out[j].ratio })
	return out
}
