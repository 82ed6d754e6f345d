package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// allRequests returns every request kmsg knows at every version it knows.
func allRequests() []kmsg.Request {
	var out []kmsg.Request
	for key := int16(0); key < 1024; key++ {
		probe := kmsg.RequestForKey(key)
		if probe == nil {
			continue
		}
		for v := int16(0); v <= probe.MaxVersion(); v++ {
			r := kmsg.RequestForKey(key)
			r.SetVersion(v)
			out = append(out, r)
		}
	}
	return out
}

// encodeRequest returns a whole request frame as a client sends it.
func encodeRequest(r kmsg.Request, correlationID int32, clientID *string) []byte {
	if r.Key() == apiKeyControlledShutdown && r.GetVersion() == 0 {
		// kmsg's formatter leaves the size unset for this one header v0
		// case, so build it by hand.
		b := binary.BigEndian.AppendUint32(nil, 0)
		b = binary.BigEndian.AppendUint16(b, uint16(r.Key()))
		b = binary.BigEndian.AppendUint16(b, 0)
		b = binary.BigEndian.AppendUint32(b, uint32(correlationID))
		b = r.AppendTo(b)
		binary.BigEndian.PutUint32(b, uint32(len(b)-4))
		return b
	}
	var f *kmsg.RequestFormatter
	if clientID != nil {
		f = kmsg.NewRequestFormatter(kmsg.FormatterClientID(*clientID))
	} else {
		f = kmsg.NewRequestFormatter()
	}
	return f.AppendRequest(nil, r, correlationID)
}

func TestParseRequestHeaderAllAPIs(t *testing.T) {
	id := "kbroker-test"
	empty := ""
	for _, clientID := range []*string{&id, &empty, nil} {
		for i, r := range allRequests() {
			name := fmt.Sprintf("key%d/v%d/clientid=%v", r.Key(), r.GetVersion(), clientID != nil)
			corr := int32(1000 + i)
			frame, err := ReadFrame(bytes.NewReader(encodeRequest(r, corr, clientID)), 1<<20)
			if err != nil {
				t.Fatalf("%s: ReadFrame: %v", name, err)
			}
			h, body, err := ParseRequestHeader(frame)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if h.APIKey != r.Key() || h.APIVersion != r.GetVersion() || h.CorrelationID != corr || h.Flexible != r.IsFlexible() {
				t.Fatalf("%s: header %+v", name, h)
			}
			headerV0 := r.Key() == apiKeyControlledShutdown && r.GetVersion() == 0
			switch {
			case headerV0 && h.ClientID != nil:
				t.Fatalf("%s: client id in header v0", name)
			case !headerV0 && (clientID == nil) != (h.ClientID == nil):
				t.Fatalf("%s: client id %v", name, h.ClientID)
			case !headerV0 && clientID != nil && *h.ClientID != *clientID:
				t.Fatalf("%s: client id %q", name, *h.ClientID)
			}
			if want := r.AppendTo(nil); !bytes.Equal(body, want) {
				t.Fatalf("%s: body %x, want %x", name, body, want)
			}
			// The body decodes with kmsg, as handlers will do.
			dec := kmsg.RequestForKey(h.APIKey)
			dec.SetVersion(h.APIVersion)
			if err := dec.ReadFrom(body); err != nil {
				t.Fatalf("%s: kmsg ReadFrom: %v", name, err)
			}
		}
	}
}

func TestParseRequestHeaderErrors(t *testing.T) {
	id := "client"
	meta := kmsg.NewPtrMetadataRequest()
	meta.SetVersion(12) // flexible
	flexFrame := encodeRequest(meta, 7, &id)[4:]
	produce := kmsg.NewPtrProduceRequest()
	produce.SetVersion(3)
	v1Frame := encodeRequest(produce, 7, &id)[4:]

	// Every strict prefix of the header is truncated.
	for _, frame := range [][]byte{flexFrame, v1Frame} {
		_, body, err := ParseRequestHeader(frame)
		if err != nil {
			t.Fatal(err)
		}
		headerLen := len(frame) - len(body)
		for n := 0; n < headerLen; n++ {
			if _, _, err := ParseRequestHeader(frame[:n]); !errors.Is(err, ErrTruncatedHeader) {
				t.Fatalf("prefix %d of %d: %v", n, headerLen, err)
			}
		}
	}

	hdr := func(key, version int16, rest ...byte) []byte {
		b := binary.BigEndian.AppendUint16(nil, uint16(key))
		b = binary.BigEndian.AppendUint16(b, uint16(version))
		b = binary.BigEndian.AppendUint32(b, 42)
		return append(b, rest...)
	}
	tests := []struct {
		name     string
		frame    []byte
		wantErr  error
		wantBody []byte
	}{
		{"negative client id", hdr(0, 3, 0xff, 0xfe, 'x'), ErrBadHeader, nil},
		{"null client id", hdr(0, 3, 0xff, 0xff, 'b'), nil, []byte("b")},
		{"unknown key parses as v1", hdr(999, 0, 0, 1, 'c', 'b'), nil, []byte("b")},
		{"tags skipped", hdr(3, 12, 0, 0, 2, 0, 1, 'x', 5, 2, 'y', 'y', 'b'), nil, []byte("b")},
		{"tags out of order", hdr(3, 12, 0, 0, 2, 5, 0, 1, 0), ErrBadHeader, nil},
		{"duplicate tag", hdr(3, 12, 0, 0, 2, 1, 0, 1, 0), ErrBadHeader, nil},
		{"tag size past end", hdr(3, 12, 0, 0, 1, 0, 9, 'x'), ErrTruncatedHeader, nil},
		{"overlong varint", hdr(3, 12, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00), ErrBadHeader, nil},
		{"varint past 32 bits", hdr(3, 12, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x7f), ErrBadHeader, nil},
		{"controlled shutdown v0", hdr(7, 0, 0, 0, 0, 1), nil, []byte{0, 0, 0, 1}},
		{"controlled shutdown v1", hdr(7, 1, 0, 0, 0, 0, 0, 1), nil, []byte{0, 0, 0, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, body, err := ParseRequestHeader(tt.frame)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("got %v, want %v", err, tt.wantErr)
			}
			if err == nil && (!bytes.Equal(body, tt.wantBody) || h.CorrelationID != 42) {
				t.Fatalf("header %+v body %q", h, body)
			}
		})
	}
}

func TestResponseHeaderFlexible(t *testing.T) {
	for _, r := range allRequests() {
		want := r.IsFlexible() && r.Key() != apiKeyApiVersions
		if got := ResponseHeaderFlexible(r.Key(), r.GetVersion()); got != want {
			t.Errorf("key %d v%d: %v", r.Key(), r.GetVersion(), got)
		}
		if IsFlexible(r.Key(), r.GetVersion()) != r.IsFlexible() {
			t.Errorf("IsFlexible key %d v%d", r.Key(), r.GetVersion())
		}
	}
	if IsFlexible(999, 5) || IsFlexible(-1, 0) {
		t.Error("unknown key flexible")
	}
}

// oneByteReader returns one byte per Read, to exercise short reads.
type oneByteReader struct{ r io.Reader }

func (o oneByteReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return o.r.Read(p[:1])
}

func frameOf(size int32, body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(size)), body...)
}

func TestReadFrame(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 3<<20) // past the eager allocation
	tests := []struct {
		name    string
		in      []byte
		max     int32
		want    []byte
		wantErr error
	}{
		{"clean EOF", nil, 100, nil, io.EOF},
		{"partial size", []byte{0, 0}, 100, nil, io.ErrUnexpectedEOF},
		{"empty frame", frameOf(0, nil), 100, []byte{}, nil},
		{"small frame", frameOf(3, []byte("abcdef")), 100, []byte("abc"), nil},
		{"at max", frameOf(5, []byte("abcde")), 5, []byte("abcde"), nil},
		{"over max", frameOf(6, []byte("abcdef")), 5, nil, ErrFrameTooLarge},
		{"negative", frameOf(-1, nil), 5, nil, ErrFrameTooLarge},
		{"truncated body", frameOf(10, []byte("abc")), 100, nil, io.ErrUnexpectedEOF},
		{"size only", frameOf(10, nil), 100, nil, io.ErrUnexpectedEOF},
		{"big frame", frameOf(int32(len(big)), big), 4 << 20, big, nil},
		{"big frame truncated", frameOf(int32(len(big)+1), big), 4 << 20, nil, io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		for _, slow := range []bool{false, true} {
			if slow && len(tt.in) > 1<<20 {
				continue
			}
			t.Run(fmt.Sprintf("%s/slow=%v", tt.name, slow), func(t *testing.T) {
				var r io.Reader = bytes.NewReader(tt.in)
				if slow {
					r = oneByteReader{r}
				}
				got, err := ReadFrame(r, tt.max)
				if err != tt.wantErr {
					t.Fatalf("err %v, want %v", err, tt.wantErr)
				}
				if err == nil && !bytes.Equal(got, tt.want) {
					t.Fatalf("body of %d bytes, want %d", len(got), len(tt.want))
				}
			})
		}
	}
}

// TestReadFrameNoAllocation: a huge or lying size costs no memory.
func TestReadFrameNoAllocation(t *testing.T) {
	measure := func(in []byte, max int32) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, _ = ReadFrame(bytes.NewReader(in), max)
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	if a := measure(frameOf(1<<31-1, nil), 100<<20); a > 64<<10 {
		t.Fatalf("oversize frame allocated %d bytes", a)
	}
	// Within the limit, a peer that announces 512 MiB and sends nothing
	// costs at most the eager allocation.
	if a := measure(frameOf(512<<20, []byte("x")), 1<<30); a > 2*eagerFrameAlloc {
		t.Fatalf("announced frame allocated %d bytes", a)
	}
}

func TestAppendResponse(t *testing.T) {
	// ApiVersions: header v0 even at a flexible version.
	av := kmsg.NewPtrApiVersionsResponse()
	av.SetVersion(3)
	av.ApiKeys = append(av.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: 0, MinVersion: 3, MaxVersion: 11})
	// Metadata v12: flexible header.
	md := kmsg.NewPtrMetadataResponse()
	md.SetVersion(12)
	md.Brokers = append(md.Brokers, kmsg.MetadataResponseBroker{NodeID: 1, Host: "localhost", Port: 9092})
	// Produce v3: classic header.
	pr := kmsg.NewPtrProduceResponse()
	pr.SetVersion(3)

	for _, resp := range []kmsg.Response{av, md, pr} {
		flexible := ResponseHeaderFlexible(resp.Key(), resp.GetVersion())
		body := resp.AppendTo(nil)
		out := AppendResponse([]byte("prefix"), 77, flexible, body)
		if !bytes.HasPrefix(out, []byte("prefix")) {
			t.Fatal("dst lost")
		}
		frame, err := ReadFrame(bytes.NewReader(out[6:]), 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if corr := int32(binary.BigEndian.Uint32(frame)); corr != 77 {
			t.Fatalf("correlation id %d", corr)
		}
		rest := frame[4:]
		if flexible {
			if rest[0] != 0 {
				t.Fatalf("key %d: tag buffer %d", resp.Key(), rest[0])
			}
			rest = rest[1:]
		}
		dec := resp.Key()
		r := kmsg.ResponseForKey(dec)
		r.SetVersion(resp.GetVersion())
		if err := r.ReadFrom(rest); err != nil {
			t.Fatalf("key %d: %v", dec, err)
		}
	}
	if !bytes.Equal(AppendResponse(nil, 1, true, []byte{9}), []byte{0, 0, 0, 6, 0, 0, 0, 1, 0, 9}) {
		t.Fatal("flexible layout")
	}
	if !bytes.Equal(AppendResponse(nil, 1, false, []byte{9}), []byte{0, 0, 0, 5, 0, 0, 0, 1, 9}) {
		t.Fatal("classic layout")
	}
}
