package record

import (
	"bytes"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Kafka's default compression levels (compression.gzip.level,
// compression.zstd.level): what the default pools compress at.
const (
	DefaultGzipLevel = gzip.DefaultCompression // -1
	DefaultZstdLevel = 3
)

// Compression levels (BatchSpec.Level) follow Kafka's
// compression.<codec>.level: gzip 1-9 (-1 the default), zstd -131072 to
// 22 (mapped to the encoder's nearest speed, 3 the default). Level 0 and
// a codec's default level use the default pools. lz4 levels are not
// applied: the lz4 frame writer here has no level matching Kafka's LZ4 HC
// levels.

// gzipPool returns the pool of gzip writers at level.
func gzipPool(level int) *sync.Pool {
	if level >= gzip.BestSpeed && level <= gzip.BestCompression {
		return gzipLevelWriters[level]
	}
	return &gzipWriters
}

// gzipLevelWriters pools gzip writers per level 1-9.
var gzipLevelWriters = func() (p [gzip.BestCompression + 1]*sync.Pool) {
	for level := gzip.BestSpeed; level <= gzip.BestCompression; level++ {
		p[level] = &sync.Pool{New: func() any {
			w, err := gzip.NewWriterLevel(new(bytes.Buffer), level)
			if err != nil {
				panic(err) // only for a level out of range
			}
			return w
		}}
	}
	return p
}()

// zstdPool returns the pool of stream encoders for a Kafka zstd level.
func zstdPool(level int) *sync.Pool {
	if level == 0 || level == DefaultZstdLevel {
		return &zstdStreamEncoders
	}
	speed := zstd.EncoderLevelFromZstd(level)
	if speed == zstd.SpeedDefault {
		return &zstdStreamEncoders
	}
	return zstdLevelEncoders[speed]
}

// zstdLevelEncoders pools stream encoders per encoder speed, with the
// default pool's window (1 MiB) so that the decompression budget's
// accounting holds whatever the level.
var zstdLevelEncoders = func() map[zstd.EncoderLevel]*sync.Pool {
	m := map[zstd.EncoderLevel]*sync.Pool{}
	for _, speed := range []zstd.EncoderLevel{zstd.SpeedFastest, zstd.SpeedBetterCompression, zstd.SpeedBestCompression} {
		m[speed] = &sync.Pool{New: func() any {
			w, err := zstd.NewWriter(nil,
				zstd.WithEncoderConcurrency(1),
				zstd.WithWindowSize(1<<20),
				zstd.WithLowerEncoderMem(true),
				zstd.WithZeroFrames(true),
				zstd.WithEncoderLevel(speed))
			if err != nil {
				panic(err) // only for invalid options
			}
			return w
		}}
	}
	return m
}()
