// Package record is the Kafka record-batch v2 format (magic 2) as a
// zero-copy view over bytes.
//
// A batch is a 61-byte header followed by the records (compressed as a
// whole when the attributes name a codec):
//
//	offset  size  field
//	     0     8  baseOffset            set by the leader (outside the CRC)
//	     8     4  batchLength           bytes after this field
//	    12     4  partitionLeaderEpoch  set by the leader (outside the CRC)
//	    16     1  magic                 always 2
//	    17     4  crc                   CRC-32C (Castagnoli) of bytes 21..end
//	    21     2  attributes            bits 0-2 codec, 3 timestamp type,
//	                                    4 transactional, 5 control,
//	                                    6 delete horizon
//	    23     4  lastOffsetDelta
//	    27     8  baseTimestamp
//	    35     8  maxTimestamp
//	    43     8  producerId
//	    51     2  producerEpoch
//	    53     4  baseSequence
//	    57     4  recordCount
//	    61     -  records
//
// Because baseOffset and partitionLeaderEpoch lie before the CRC'd range, a
// leader rewrites them in place without recomputing the CRC; everything
// from byte 21 on stays exactly as the producer sent it.
//
// It imports the compression libraries (klauspost/compress,
// pierrec/lz4) and x/sync/semaphore only, and must never import any
// other kbroker package: where batches are stored is storage's.
package record
