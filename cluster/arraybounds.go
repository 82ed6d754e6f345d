package cluster

import (
	"encoding/binary"
	"fmt"

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

// leadingArrayAPIs are the requests whose first field, in every version,
// is an array of names: Metadata topics, DescribeGroups groups,
// DeleteTopics names (topics from v6), DeleteGroups groups.
var leadingArrayAPIs = map[int16]bool{
	3:  true,
	15: true,
	20: true,
	42: true,
}

// checkArrayBounds refuses a request whose leading array declares more
// than maxLeadingArrayLen elements. req has its version set and is not
// decoded yet; body is the request after its header.
func checkArrayBounds(req kmsg.Request, body []byte) error {
	if !leadingArrayAPIs[req.Key()] {
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
