package remote

import (
	"container/list"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/kbroker/kbroker/wire/record"
)

// ReaderConfig bounds a Reader.
type ReaderConfig struct {
	// ChunkSize is the bytes of a .log object fetched at once
	// (rsm.config.chunk.size).
	ChunkSize int64
	// CacheBytes bounds the cached chunks and indexes
	// (rsm.config.fetch.chunk.cache.size); at least one chunk.
	CacheBytes int64
	// Threads bounds the store fetches in flight, reads and read-ahead
	// together (remote.log.reader.threads).
	Threads int
	// FetchTimeout bounds one fetch from the store (0: 30 s).
	FetchTimeout time.Duration
}

// ErrOffsetNotInSegment: a read asked a segment for an offset it does not
// hold.
var ErrOffsetNotInSegment = errors.New("remote: offset not in segment")

// ErrCorruptSegment: a remote object's bytes are not what the segment's
// metadata says (a batch running past the segment, a bad index).
var ErrCorruptSegment = errors.New("remote: corrupt remote segment")

// Reader reads batches of remote segments through a bounded cache of
// chunks. It is safe for concurrent use.
type Reader struct {
	store Storage
	cfg   ReaderConfig
	sem   chan struct{}

	ctx    context.Context // cancelled by Close; read-ahead runs under it
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu struct {
		sync.Mutex
		entries map[chunkKey]*chunk
		lru     *list.List // of *chunk, most recent first
		bytes   int64
	}
}

type chunkKey struct {
	id   SegmentID
	file File
	idx  int64 // chunk number; -1: the whole object
}

type chunk struct {
	key   chunkKey
	ready chan struct{} // closed once data or err is set
	data  []byte
	err   error
	elem  *list.Element // nil until ready and cached
}

// NewReader returns a Reader over store. Close stops its read-ahead.
func NewReader(store Storage, cfg ReaderConfig) *Reader {
	if cfg.ChunkSize <= 0 {
		cfg.ChunkSize = 4 << 20
	}
	cfg.CacheBytes = max(cfg.CacheBytes, cfg.ChunkSize)
	if cfg.Threads <= 0 {
		cfg.Threads = 10
	}
	if cfg.FetchTimeout <= 0 {
		cfg.FetchTimeout = 30 * time.Second
	}
	r := &Reader{store: store, cfg: cfg, sem: make(chan struct{}, cfg.Threads)}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.mu.entries = map[chunkKey]*chunk{}
	r.mu.lru = list.New()
	return r
}

// Close cancels the read-ahead fetches and waits for them.
func (r *Reader) Close() {
	r.cancel()
	r.wg.Wait()
}

// CachedBytes is the bytes the cache holds.
func (r *Reader) CachedBytes() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.bytes
}

// Read returns whole batches of seg from the one holding offset on, at
// most maxBytes of them, or the first whole batch however large when
// minOneBatch (Kafka's fetch rule). It stops at the segment's end.
func (r *Reader) Read(ctx context.Context, seg Segment, offset int64, maxBytes int, minOneBatch bool) ([]byte, error) {
	if offset < seg.BaseOffset || offset > seg.EndOffset {
		return nil, fmt.Errorf("%w: offset %d, segment %d-%d", ErrOffsetNotInSegment, offset, seg.BaseOffset, seg.EndOffset)
	}
	pos, err := r.startPosition(ctx, seg, offset)
	if err != nil {
		return nil, err
	}
	var out []byte
	for pos < seg.Size {
		if seg.Size-pos < record.HeaderSize {
			return nil, fmt.Errorf("%w: %d bytes left at %d of %s", ErrCorruptSegment, seg.Size-pos, pos, seg.ID)
		}
		hdr, err := r.readAt(ctx, seg, pos, record.HeaderSize)
		if err != nil {
			return nil, err
		}
		size, err := record.PeekSize(hdr)
		if err != nil || int64(size) > seg.Size-pos || size < record.HeaderSize {
			return nil, fmt.Errorf("%w: batch at %d of %s: size %d: %v", ErrCorruptSegment, pos, seg.ID, size, err)
		}
		if record.Batch(hdr).LastOffset() < offset {
			pos += int64(size)
			continue
		}
		if len(out)+size > maxBytes && (len(out) > 0 || !minOneBatch) {
			break
		}
		b, err := r.readAt(ctx, seg, pos, size)
		if err != nil {
			return nil, err
		}
		if out == nil {
			out = make([]byte, 0, min(maxBytes, int(seg.Size-pos)))
		}
		out = append(out, b...)
		pos += int64(size)
	}
	return out, nil
}

// startPosition is the position of the last indexed batch ending at or
// before offset (0 without one): the offset index's entries are the
// relative last offset of a batch and its position.
func (r *Reader) startPosition(ctx context.Context, seg Segment, offset int64) (int64, error) {
	idx, err := r.get(ctx, seg, chunkKey{id: seg.ID, file: FileOffsetIndex, idx: -1})
	if err != nil {
		return 0, err
	}
	if len(idx)%8 != 0 {
		return 0, fmt.Errorf("%w: offset index of %s has %d bytes", ErrCorruptSegment, seg.ID, len(idx))
	}
	rel := offset - seg.BaseOffset
	lo, hi := 0, len(idx)/8 // first entry with relative offset > rel
	for lo < hi {
		m := (lo + hi) / 2
		if int64(int32(binary.BigEndian.Uint32(idx[8*m:]))) <= rel {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return 0, nil
	}
	pos := int64(int32(binary.BigEndian.Uint32(idx[8*(lo-1)+4:])))
	if pos < 0 || pos >= seg.Size {
		return 0, fmt.Errorf("%w: offset index of %s points at %d of %d bytes", ErrCorruptSegment, seg.ID, pos, seg.Size)
	}
	return pos, nil
}

// readAt returns n bytes of seg's .log from pos (within the segment).
func (r *Reader) readAt(ctx context.Context, seg Segment, pos int64, n int) ([]byte, error) {
	out := make([]byte, 0, n)
	for len(out) < n {
		p := pos + int64(len(out))
		ci := p / r.cfg.ChunkSize
		c, err := r.get(ctx, seg, chunkKey{id: seg.ID, file: FileLog, idx: ci})
		if err != nil {
			return nil, err
		}
		off := p - ci*r.cfg.ChunkSize
		if off >= int64(len(c)) {
			return nil, fmt.Errorf("%w: chunk %d of %s has %d bytes", ErrCorruptSegment, ci, seg.ID, len(c))
		}
		out = append(out, c[off:min(int64(len(c)), off+int64(n-len(out)))]...)
		if next := (ci + 1) * r.cfg.ChunkSize; next < seg.Size {
			r.readAhead(seg, chunkKey{id: seg.ID, file: FileLog, idx: ci + 1})
		}
	}
	return out, nil
}

// readAhead starts fetching k if it is not cached.
func (r *Reader) readAhead(seg Segment, k chunkKey) { r.start(seg, k) }

// start returns k's entry, starting its fetch if it has none. The fetch
// runs on a goroutine the Reader owns, under the Reader's context with
// FetchTimeout, so a reader that stops waiting (its fetch's deadline)
// leaves it to finish and fill the cache for the next read.
func (r *Reader) start(seg Segment, k chunkKey) *chunk {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.mu.entries[k]; ok {
		if c.elem != nil {
			r.mu.lru.MoveToFront(c.elem)
		}
		return c
	}
	c := &chunk{key: k, ready: make(chan struct{})}
	if r.ctx.Err() != nil {
		c.err = r.ctx.Err()
		close(c.ready)
		return c
	}
	r.mu.entries[k] = c
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		ctx, cancel := context.WithTimeout(r.ctx, r.cfg.FetchTimeout)
		data, err := r.fetch(ctx, seg, k)
		cancel()
		r.mu.Lock()
		c.data, c.err = data, err
		if err != nil {
			delete(r.mu.entries, k)
		} else {
			c.elem = r.mu.lru.PushFront(c)
			r.mu.bytes += int64(len(data))
			r.evictLocked()
		}
		r.mu.Unlock()
		close(c.ready)
	}()
	return c
}

// get returns k's bytes, from the cache or the store, waiting at most
// until ctx ends.
func (r *Reader) get(ctx context.Context, seg Segment, k chunkKey) ([]byte, error) {
	c := r.start(seg, k)
	select {
	case <-c.ready:
		return c.data, c.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (r *Reader) evictLocked() {
	for r.mu.bytes > r.cfg.CacheBytes && r.mu.lru.Len() > 1 {
		old := r.mu.lru.Remove(r.mu.lru.Back()).(*chunk)
		delete(r.mu.entries, old.key)
		r.mu.bytes -= int64(len(old.data))
	}
}

func (r *Reader) fetch(ctx context.Context, seg Segment, k chunkKey) ([]byte, error) {
	select {
	case r.sem <- struct{}{}:
		defer func() { <-r.sem }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	start, end := int64(0), int64(-1)
	limit := r.cfg.CacheBytes // an index bigger than the cache is refused
	if k.idx >= 0 {
		start = k.idx * r.cfg.ChunkSize
		end = min(start+r.cfg.ChunkSize, seg.Size)
		limit = end - start
	}
	body, err := r.store.Fetch(ctx, seg, k.file, start, end)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	data, err := io.ReadAll(io.LimitReader(body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("remote: read %s of %s: %w", k.file, seg.ID, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w: %s of %s is larger than %d bytes", ErrCorruptSegment, k.file, seg.ID, limit)
	}
	if k.idx >= 0 && int64(len(data)) != end-start {
		return nil, fmt.Errorf("%w: chunk %d of %s: %d bytes, want %d", ErrCorruptSegment, k.idx, seg.ID, len(data), end-start)
	}
	return data, nil
}
