package kafkaapi

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/wire"
	"github.com/kbroker/kbroker/wire/record"
)

// FuzzRequest sends one request frame, built from an API key, a version
// and a body, through a connection of a real Server (frame reading,
// header parsing, the version table of Node.apis, kmsg decoding, response
// encoding) whose handlers are replaced by a stub: handlers need a
// running cluster, and what is fuzzed here is everything in front of
// them. The stub also reads each Produce partition's records as the
// produce path does (record.Parse, then the leader's record scan). The
// invariants: no panic; a served key and version whose body kmsg decodes
// gets a response with the request's correlation id; anything else
// closes the connection, except an ApiVersions in a version we do not
// serve, which is answered (UNSUPPORTED_VERSION) as Kafka does.
//
// The seed corpus under testdata/fuzz/FuzzRequest is every served key at
// its lowest and highest version, encoded by kmsg; regenerate it with
//
//	KB_WRITE_FUZZ_CORPUS=1 go test -run TestWriteRequestFuzzCorpus ./cluster
func FuzzRequest(f *testing.F) {
	for _, s := range requestSeeds(f) {
		f.Add(s.key, s.version, s.body)
	}
	srv, served := fuzzServer()
	f.Fuzz(func(t *testing.T, key, version int16, body []byte) {
		const correlationID = 0x0b0e
		frame := requestFrame(key, version, correlationID, body)
		resp, closed := roundTrip(t, srv, frame)

		a, ok := served[key]
		inRange := ok && version >= a.Min && version <= a.Max
		decodes := false
		if inRange {
			req := kmsg.RequestForKey(key)
			req.SetVersion(version)
			decodes = req.ReadFrom(body) == nil
		}
		switch {
		case decodes || key == kmsg.ApiVersions.Int16() && !inRange:
			if closed || len(resp) < 4 || int32(binary.BigEndian.Uint32(resp)) != correlationID {
				t.Fatalf("key %d v%d decodes but got closed=%v, response %x", key, version, closed, resp)
			}
		case !closed:
			t.Fatalf("key %d v%d does not decode but the connection stays open (response %x)", key, version, resp)
		}
	})
}

// fuzzServer is a Server with the real dispatch table whose handlers are
// fuzzStub, except ApiVersions, which is the real one.
func fuzzServer() (*server.Server, map[int16]server.API) {
	apis := (&Handlers{}).APIs()
	served := make(map[int16]server.API, len(apis))
	for i := range apis {
		if apis[i].Key != kmsg.ApiVersions.Int16() {
			apis[i].Handle = fuzzStub
		}
		served[apis[i].Key] = apis[i]
	}
	srv := server.New(slog.New(slog.NewTextHandler(io.Discard, nil)), apis, defaultServerConfig(), server.NewMetrics())
	return srv, served
}

// fuzzStub answers with an empty response of the request's kind, after
// reading a Produce request's record batches as the produce path does.
func fuzzStub(_ context.Context, rc *server.RequestContext, req kmsg.Request) (kmsg.Response, error) {
	if p, ok := req.(*kmsg.ProduceRequest); ok {
		for _, topic := range p.Topics {
			for _, part := range topic.Partitions {
				b, _, err := record.Parse(part.Records)
				if err != nil {
					continue
				}
				err = record.Scan(b, 1<<20, func(*record.Record) error { return nil })
				if err != nil && !errors.Is(err, record.ErrCorrupt) && !errors.Is(err, record.ErrInvalid) &&
					!errors.Is(err, record.ErrTooLarge) && !errors.Is(err, record.ErrMagic) {
					return nil, fmt.Errorf("record error wraps no sentinel: %w", err)
				}
			}
		}
	}
	resp := req.ResponseKind()
	resp.SetVersion(rc.Header.APIVersion)
	return resp, nil
}

// requestFrame encodes a request frame: size, header (v1, or v2 with an
// empty tagged-field section when the request is flexible), body.
func requestFrame(key, version int16, correlationID int32, body []byte) []byte {
	clientID := "fuzz"
	h := binary.BigEndian.AppendUint16(nil, uint16(key))
	h = binary.BigEndian.AppendUint16(h, uint16(version))
	h = binary.BigEndian.AppendUint32(h, uint32(correlationID))
	h = binary.BigEndian.AppendUint16(h, uint16(len(clientID)))
	h = append(h, clientID...)
	if wire.IsFlexible(key, version) {
		h = append(h, 0)
	}
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(h)+len(body)))
	return append(append(frame, h...), body...)
}

// roundTrip serves one connection over a pipe, writes frame, and returns
// the first response frame's body, or closed when the server closed the
// connection without one.
func roundTrip(t *testing.T, srv *server.Server, frame []byte) (resp []byte, closed bool) {
	t.Helper()
	client, server := net.Pipe()
	defer client.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.ServeConn(ctx, server, "PLAINTEXT")
	}()
	defer func() {
		client.Close()
		<-done
	}()
	if err := client.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	werr := make(chan error, 1)
	go func() {
		_, err := client.Write(frame)
		werr <- err
	}()
	resp, err := wire.ReadFrame(client, 1<<30)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.ErrClosedPipe) {
			_ = client.Close() // unblocks a write the server stopped reading
			if err := <-werr; err != nil && !errors.Is(err, io.ErrClosedPipe) {
				t.Fatalf("writing the request: %v", err) // the server closing is the answer, nothing else
			}
			return nil, true
		}
		t.Fatalf("reading the response: %v", err)
	}
	_ = client.Close()
	if err := <-werr; err != nil {
		t.Fatalf("writing the request: %v", err) // answered, so it was read whole
	}
	return resp, false
}

type requestSeed struct {
	name         string
	key, version int16
	body         []byte
}

// requestSeeds is every served key at its lowest and highest version as
// kmsg encodes its default request, plus a Produce carrying a real batch.
func requestSeeds(tb testing.TB) []requestSeed {
	var seeds []requestSeed
	for _, a := range (&Handlers{}).APIs() {
		for _, v := range []int16{a.Min, a.Max} {
			req := kmsg.RequestForKey(a.Key)
			req.SetVersion(v)
			seeds = append(seeds, requestSeed{fmt.Sprintf("key%d-v%d", a.Key, v), a.Key, v, req.AppendTo(nil)})
		}
	}
	b, err := record.Build(record.BatchSpec{Attributes: int16(record.CodecZstd), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]record.Record{{Value: []byte("fuzz")}, {OffsetDelta: 1, Key: []byte("k"), Value: bytes.Repeat([]byte("v"), 100)}})
	if err != nil {
		tb.Fatal(err)
	}
	for _, v := range []int16{3, 11} {
		p := kmsg.NewPtrProduceRequest()
		p.SetVersion(v)
		p.Acks, p.TimeoutMillis = -1, 1000
		topic := kmsg.NewProduceRequestTopic()
		topic.Topic = "fuzz"
		part := kmsg.NewProduceRequestTopicPartition()
		part.Records = b
		topic.Partitions = append(topic.Partitions, part)
		p.Topics = append(p.Topics, topic)
		seeds = append(seeds, requestSeed{fmt.Sprintf("produce-zstd-v%d", v), 0, v, p.AppendTo(nil)})
	}
	return seeds
}

// TestWriteRequestFuzzCorpus writes the seed corpus in Go's corpus file
// format.
func TestWriteRequestFuzzCorpus(t *testing.T) {
	if os.Getenv("KB_WRITE_FUZZ_CORPUS") == "" {
		t.Skip("set KB_WRITE_FUZZ_CORPUS=1 to regenerate testdata/fuzz")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzRequest")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, s := range requestSeeds(t) {
		content := fmt.Sprintf("go test fuzz v1\nint16(%d)\nint16(%d)\n[]byte(%q)\n", s.key, s.version, s.body)
		if err := os.WriteFile(filepath.Join(dir, s.name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
