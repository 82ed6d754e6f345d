package remote

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
)

// SegmentID identifies one upload attempt of one segment (Kafka's
// RemoteLogSegmentId's uuid).
type SegmentID [16]byte

// NewSegmentID returns a random id.
func NewSegmentID() SegmentID {
	var id SegmentID
	_, _ = rand.Read(id[:]) // crypto/rand.Read never fails (Go 1.24+)
	return id
}

func (id SegmentID) String() string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// Segment names one remote segment: where its objects live and the offsets
// it holds.
type Segment struct {
	Topic      string
	TopicID    [16]byte
	Partition  int32
	ID         SegmentID
	BaseOffset int64
	EndOffset  int64 // last offset in the segment, inclusive
	// Size is the .log object's size in bytes.
	Size int64
}

// File is one kind of file of a segment.
type File int

// The files of a segment, in upload order (the .log last, so a
// segment whose .log exists has all its other objects).
const (
	FileOffsetIndex File = iota
	FileTimeIndex
	FileTxnIndex
	FileProducerSnapshot
	FileLeaderEpochs
	FileLog
	numFiles
)

var suffixes = [numFiles]string{
	FileOffsetIndex:      "index",
	FileTimeIndex:        "timeindex",
	FileTxnIndex:         "txnindex",
	FileProducerSnapshot: "snapshot",
	FileLeaderEpochs:     "leader-epoch-checkpoint",
	FileLog:              "log",
}

func (f File) String() string {
	if f >= 0 && f < numFiles {
		return suffixes[f]
	}
	return fmt.Sprintf("file(%d)", int(f))
}

// PartitionPrefix is the key prefix of every object of one partition.
func PartitionPrefix(topic string, topicID [16]byte, partition int32) string {
	return fmt.Sprintf("%s-%s/%d/", topic, base64.RawURLEncoding.EncodeToString(topicID[:]), partition)
}

// Key is the object key of one file of seg (without the store's prefix).
func Key(seg Segment, f File) string {
	return fmt.Sprintf("%s%020d-%s.%s", PartitionPrefix(seg.Topic, seg.TopicID, seg.Partition), seg.BaseOffset, seg.ID, f)
}

// Files are the local files of a segment to copy. An empty path is a file
// the segment does not have (only TxnIndex and ProducerSnapshot may be
// absent).
type Files struct {
	Log, OffsetIndex, TimeIndex, TxnIndex, ProducerSnapshot string
	// LeaderEpochs is the leader epoch checkpoint's content for the
	// segment (Kafka's leader-epoch-checkpoint format).
	LeaderEpochs []byte
}

func (fs Files) path(f File) string {
	switch f {
	case FileLog:
		return fs.Log
	case FileOffsetIndex:
		return fs.OffsetIndex
	case FileTimeIndex:
		return fs.TimeIndex
	case FileTxnIndex:
		return fs.TxnIndex
	case FileProducerSnapshot:
		return fs.ProducerSnapshot
	}
	return ""
}

// ErrNotFound: the store has no such object (a segment deleted, or never
// finished).
var ErrNotFound = errors.New("remote: object not found")

// Storage is Kafka's RemoteStorageManager: the I/O of remote segments.
// Every method honours ctx's deadline. Implementations are safe for
// concurrent use.
type Storage interface {
	// CopySegment uploads the files of seg. On error some objects may
	// exist: the caller deletes seg (DeleteSegment) or retries under a
	// new SegmentID.
	CopySegment(ctx context.Context, seg Segment, files Files) error
	// Fetch returns the bytes [start, end) of one file of seg (end < 0:
	// to the end of the object).
	Fetch(ctx context.Context, seg Segment, f File, start, end int64) (io.ReadCloser, error)
	// DeleteSegment deletes every object of seg; absent ones are not an
	// error.
	DeleteSegment(ctx context.Context, seg Segment) error
}
