package record

import (
	"bytes"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Kafka's default compression levels (compression.gzip.level,
// compression.zstd.level); Compress uses them.
const (
	DefaultGzipLevel = gzip.DefaultCompression // -1
	DefaultZstdLevel = 3
)

// CompressLevel is Compress at a Kafka compression level: gzip 1-9 (-1
// the default), zstd -131072 to 22 (mapped to the encoder's nearest
// speed, 3 the default). Level 0, a codec's default level, and the other
// codecs compress as Compress does. lz4 levels are not applied: the lz4
// frame writer here has no level matching Kafka's LZ4 HC levels.
func CompressLevel(codec Codec, level int, dst, src []byte) ([]byte, error) {
	switch {
	case codec == CodecGzip && level >= gzip.BestSpeed && level <= gzip.BestCompression:
		return compressPooled[*gzip.Writer](gzipLevelWriters[level], dst, src)
	case codec == CodecZstd && level != 0 && level != DefaultZstdLevel:
		return zstdEncoderAt(zstd.EncoderLevelFromZstd(level)).EncodeAll(src, dst), nil
	}
	return Compress(codec, dst, src)
}

// gzipLevelWriters pools gzip writers per level 1-9.
var gzipLevelWriters = func() (p [gzip.BestCompression + 1]*sync.Pool) {
	for level := gzip.BestSpeed; level <= gzip.BestCompression; level++ {
		p[level] = new(sync.Pool)
		p[level].New = func() any {
			w, err := gzip.NewWriterLevel(new(bytes.Buffer), level)
			if err != nil {
				panic(err) // only for a level out of range
			}
			return w
		}
	}
	return p
}()

// zstdLevelEncoders holds one encoder per speed; EncodeAll is safe for
// concurrent use.
var zstdLevelEncoders sync.Map // zstd.EncoderLevel → *zstd.Encoder

func zstdEncoderAt(level zstd.EncoderLevel) *zstd.Encoder {
	if e, ok := zstdLevelEncoders.Load(level); ok {
		return e.(*zstd.Encoder)
	}
	e, err := zstd.NewWriter(nil, zstd.WithZeroFrames(true), zstd.WithEncoderLevel(level))
	if err != nil {
		panic(err) // only for invalid options
	}
	if prev, loaded := zstdLevelEncoders.LoadOrStore(level, e); loaded {
		e.Close()
		return prev.(*zstd.Encoder)
	}
	return e
}
