package record

import (
	"bytes"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Kafka's default compression levels (compression.gzip.level,
// compression.lz4.level, compression.zstd.level): what the default pools compress at.
const (
	DefaultGzipLevel = gzip.DefaultCompression // -1
	DefaultZstdLevel = 3
	DefaultLz4Level  = 9
)

// Compression levels (BatchSpec.Level) follow Kafka's
// compression.<codec>.level: gzip 1-9 (-1 the default), zstd -131072 to
// 22 (mapped to the encoder's nearest speed, 3 the default). Level 0 and
// a codec's default level use the default pools. lz4 is 1-17, 9 the
// default; see lz4Pool.

// lz4Pool returns the pool of lz4 frame writers for a Kafka lz4 level.
// As Kafka's lz4 stream, the default level (9) compresses with the fast
// compressor and every other level 1-17 with LZ4 HC at that level. The
// frame writer here has nine HC levels, so Kafka's level L maps to HC level
// ceil(L/2) (1 to 1, 17 to 9). Level 0 (none given) is the fast writer.
func lz4Pool(level int) *sync.Pool {
	if level < 1 || level > 17 || level == DefaultLz4Level {
		return &lz4Writers
	}
	return lz4LevelWriters[(level+1)/2-1]
}

// lz4LevelWriters pools lz4 frame writers per HC level 1-9, with the
// default pool's 64 KiB blocks.
var lz4LevelWriters = func() (p [9]*sync.Pool) {
	levels := [...]lz4.CompressionLevel{lz4.Level1, lz4.Level2, lz4.Level3, lz4.Level4, lz4.Level5, lz4.Level6, lz4.Level7, lz4.Level8, lz4.Level9}
	for i, level := range levels {
		p[i] = &sync.Pool{New: func() any {
			w := lz4.NewWriter(nil)
			if err := w.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ConcurrencyOption(1), lz4.CompressionLevelOption(level)); err != nil {
				panic(err) // only for invalid options
			}
			return w
		}}
	}
	return p
}()

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
