package cluster

import (
	"encoding/binary"
	"testing"

	"github.com/kbroker/kbroker/internal/kafkatest"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestApiVersions(t *testing.T) {
	node := startNode(t, "")
	c := kafkatest.Dial(t, node.addr)
	for v := int16(0); v <= 4; v++ {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = v
		req.ClientSoftwareName, req.ClientSoftwareVersion = "raw", "1"
		resp := c.RoundTrip(req).(*kmsg.ApiVersionsResponse)
		if resp.ErrorCode != 0 {
			t.Fatalf("v%d: error %d", v, resp.ErrorCode)
		}
		ranges := map[int16][2]int16{}
		for _, k := range resp.ApiKeys {
			ranges[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
		}
		// What current clients (and Debian's librdkafka) look for.
		for key, want := range map[int16][2]int16{0: {0, 13}, 1: {4, 18}, 2: {1, 10}, 3: {0, 13}, 18: {0, 4}, 19: {2, 7}, 20: {1, 6}, 22: {0, 5}, 75: {0, 0}} {
			if ranges[key] != want {
				t.Errorf("v%d: %s range %v, want %v", v, kmsg.NameForKey(key), ranges[key], want)
			}
		}
		// Features from v3: transaction.version stops below 2 and is
		// not finalized, so clients keep the KIP-890 part 1 flow; before
		// v4 no feature is listed from level 0 (KAFKA-17011).
		var tv []kmsg.ApiVersionsResponseSupportedFeature
		for _, f := range resp.SupportedFeatures {
			if f.Name == "transaction.version" {
				tv = append(tv, f)
			}
		}
		wantMin := int16(0)
		if v < 4 {
			wantMin = 1
		}
		if v >= 3 && (len(tv) != 1 || tv[0].MinVersion != wantMin || tv[0].MaxVersion != 1) || v < 3 && len(resp.SupportedFeatures) > 0 {
			t.Errorf("v%d: supported features %+v, want transaction.version %d–1 from v3", v, resp.SupportedFeatures, wantMin)
		}
		finalized := map[string]int16{}
		for _, f := range resp.FinalizedFeatures {
			finalized[f.Name] = f.MaxVersionLevel
		}
		if _, ok := finalized["transaction.version"]; ok || v >= 3 && finalized["metadata.version"] < 1 {
			t.Errorf("v%d: finalized features %+v, want metadata.version and no transaction.version", v, resp.FinalizedFeatures)
		}
	}

	// A version we do not serve is answered in v0 with the ranges.
	c.Corr++
	body := c.Header(18, 99, true)
	c.WriteFrame(body)
	v0 := kmsg.NewPtrApiVersionsResponse()
	v0.Version = 0
	c.Recv(c.Corr, v0)
	if v0.ErrorCode != kerr.UnsupportedVersion.Code || len(v0.ApiKeys) == 0 {
		t.Fatalf("ApiVersions v99: error %d with %d ranges, want UNSUPPORTED_VERSION with ranges", v0.ErrorCode, len(v0.ApiKeys))
	}
}

func TestUnsupportedRequestClosesConnection(t *testing.T) {
	node := startNode(t, "")
	for _, tc := range []struct {
		name         string
		key, version int16
	}{
		{"unknown key", 999, 0},
		{"unsupported version", 1, 3}, // Fetch below v4
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := kafkatest.Dial(t, node.addr)
			c.Corr++
			c.WriteFrame(c.Header(tc.key, tc.version, false))
			c.ExpectClosed()
		})
	}
}

func TestOversizeFrameClosesConnection(t *testing.T) {
	node := startNode(t, "", "socket.request.max.bytes=100000", "message.max.bytes=50000")
	c := kafkatest.Dial(t, node.addr)
	// Announce a frame far above the limit; the broker must close
	// without reading (or allocating) the body.
	if _, err := c.NC.Write(binary.BigEndian.AppendUint32(nil, 1<<30)); err != nil {
		t.Fatal(err)
	}
	c.ExpectClosed()
}

// Many requests sent back to back are answered in order.
func TestPipelinedResponsesInOrder(t *testing.T) {
	node := startNode(t, "")
	createTopic(t, node.addr, "pipeline", 1, nil)
	c := kafkatest.Dial(t, node.addr)
	var corrs []int32
	var kinds []kmsg.Request
	for i := range 60 {
		var req kmsg.Request
		switch i % 3 {
		case 0:
			req = kafkatest.ProduceRequest(9, -1, "pipeline", map[int32][]byte{0: testBatch(t, 2, -1, -1, -1)})
		case 1:
			m := kmsg.NewPtrMetadataRequest()
			m.Version = 12
			req = m
		default:
			a := kmsg.NewPtrApiVersionsRequest()
			a.Version = 3
			req = a
		}
		corrs = append(corrs, c.Send(req))
		kinds = append(kinds, req)
	}
	for i, corr := range corrs {
		resp := kinds[i].ResponseKind()
		c.Recv(corr, resp)
		if p, ok := resp.(*kmsg.ProduceResponse); ok {
			part := p.Topics[0].Partitions[0]
			if part.ErrorCode != 0 || part.BaseOffset != int64(2*(i/3)) {
				t.Fatalf("produce %d: error %d base offset %d, want %d", i/3, part.ErrorCode, part.BaseOffset, 2*(i/3))
			}
		}
	}
}
