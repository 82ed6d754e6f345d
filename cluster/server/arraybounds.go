package server

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxLeadingArrayLen bounds the element count of the leading array of the
// requests in leadingArrayAPIs, checked on the raw body before decoding.
//
// Their elements are tiny on the wire (an empty topic or group name is 2
// bytes) but tens of bytes once decoded, so an 8 MB Metadata request
// naming 4,000,000 empty topics would decode into hundreds of megabytes.
// 100,000 is far above what a client names in one request (clients ask
// for all topics with a null list, and a cluster's topic count is
// usually in the thousands) while keeping the decoded request under about
// 10 MB. Kafka has no such bound; a request over it closes the
// connection, as one that does not decode does.
const maxLeadingArrayLen = 100_000

// leadingArrayAPIs are the requests whose first field is an array, in
// the versions given (kmsg's field order): Metadata topics, OffsetFetch
// groups (v8+), DescribeGroups and DeleteGroups groups, ListGroups state
// filters (v4+), CreateTopics, DeleteTopics, DeleteRecords and
// CreatePartitions topics, OffsetForLeaderEpoch topics (v0–2, before the
// replica id came first), DescribeConfigs and IncrementalAlterConfigs
// resources. Arrays further in (Produce and Fetch partitions) have
// elements of at least a dozen bytes, so their decoded size stays a small
// multiple of the frame.
var leadingArrayAPIs = map[int16]struct{ min, max int16 }{
	3:  {0, math.MaxInt16},
	9:  {8, math.MaxInt16},
	15: {0, math.MaxInt16},
	16: {4, math.MaxInt16},
	19: {0, math.MaxInt16},
	20: {0, math.MaxInt16},
	21: {0, math.MaxInt16},
	23: {0, 2},
	32: {0, math.MaxInt16},
	37: {0, math.MaxInt16},
	42: {0, math.MaxInt16},
	44: {0, math.MaxInt16},
}

// checkArrayBounds refuses a request whose leading array declares more
// than maxLeadingArrayLen elements. req has its version set and is not
// decoded yet; body is the request after its header.
func checkArrayBounds(req kmsg.Request, body []byte) error {
	vs, ok := leadingArrayAPIs[req.Key()]
	if v := req.GetVersion(); !ok || v < vs.min || v > vs.max {
		return nil
	}
	var n int64
	if req.IsFlexible() {
		// Compact array: unsigned varint of count+1 (0 is null).
		u, used := binary.Uvarint(body)
		if used <= 0 {
			return nil // let the decoder report the malformed body
		}
		n = int64(u) - 1
	} else {
		if len(body) < 4 {
			return nil
		}
		n = int64(int32(binary.BigEndian.Uint32(body)))
	}
	if n > maxLeadingArrayLen {
		return fmt.Errorf("%s v%d names %d elements, more than the per-request bound %d",
			kmsg.NameForKey(req.Key()), req.GetVersion(), n, maxLeadingArrayLen)
	}
	return nil
}
