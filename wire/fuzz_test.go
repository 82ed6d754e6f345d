package wire

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The seed corpora under testdata/fuzz are real request frames encoded by
// kmsg; regenerate them with
//
//	KB_WRITE_FUZZ_CORPUS=1 go test -run TestWriteFuzzCorpus ./wire

func seedRequests() map[string][]byte {
	id := "kbroker-fuzz"
	seeds := make(map[string][]byte)
	for _, kv := range [][2]int16{
		{0, 3}, {0, 9}, {0, 11}, // Produce: classic and flexible
		{1, 4}, {1, 12}, {1, 16}, // Fetch
		{3, 1}, {3, 12}, // Metadata
		{7, 0}, {7, 3}, // ControlledShutdown: header v0, then v2
		{18, 0}, {18, 3}, // ApiVersions
		{22, 4}, // InitProducerId
	} {
		r := kmsg.RequestForKey(kv[0])
		r.SetVersion(kv[1])
		seeds[fmt.Sprintf("key%d-v%d", kv[0], kv[1])] = encodeRequest(r, 123, &id)
	}
	return seeds
}

func FuzzParseRequestHeader(f *testing.F) {
	for _, frame := range seedRequests() {
		f.Add(frame[4:])
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		h, body, err := ParseRequestHeader(frame)
		if err != nil {
			return
		}
		headerLen := len(frame) - len(body)
		if headerLen < 8 || !bytes.Equal(frame[headerLen:], body) {
			t.Fatalf("body is not the frame's suffix after an %d-byte header", headerLen)
		}
		if h.Flexible != IsFlexible(h.APIKey, h.APIVersion) {
			t.Fatal("flexible mismatch")
		}
	})
}

func FuzzReadFrame(f *testing.F) {
	for _, frame := range seedRequests() {
		f.Add(frame, int32(1<<20))
		f.Add(frame, int32(len(frame)-5)) // one byte short of the limit
	}
	f.Fuzz(func(t *testing.T, in []byte, maxSize int32) {
		// The limit is what bounds allocation; keep it small enough that
		// the fuzzer cannot ask for gigabytes legitimately.
		maxSize = min(maxSize, 4<<20)
		body, err := ReadFrame(bytes.NewReader(in), maxSize)
		if err != nil {
			return
		}
		if int64(len(body)) > int64(maxSize) || !bytes.Equal(body, in[4:4+len(body)]) {
			t.Fatalf("body of %d bytes from %d input bytes, max %d", len(body), len(in), maxSize)
		}
	})
}

// TestWriteFuzzCorpus writes the seed corpora in Go's corpus file format.
func TestWriteFuzzCorpus(t *testing.T) {
	if os.Getenv("KB_WRITE_FUZZ_CORPUS") == "" {
		t.Skip("set KB_WRITE_FUZZ_CORPUS=1 to regenerate testdata/fuzz")
	}
	for name, frame := range seedRequests() {
		writeCorpus(t, "FuzzParseRequestHeader", name, fmt.Sprintf("[]byte(%q)", frame[4:]))
		writeCorpus(t, "FuzzReadFrame", name, fmt.Sprintf("[]byte(%q)", frame), fmt.Sprintf("int32(%d)", 1<<20))
		writeCorpus(t, "FuzzReadFrame", name+"-over-limit", fmt.Sprintf("[]byte(%q)", frame), fmt.Sprintf("int32(%d)", len(frame)-5))
	}
}

func writeCorpus(t *testing.T, fuzzName, name string, values ...string) {
	t.Helper()
	dir := filepath.Join("testdata", "fuzz", fuzzName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	content := "go test fuzz v1\n"
	for _, v := range values {
		content += v + "\n"
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
