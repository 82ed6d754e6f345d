package metadata

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/kbroker/kbroker/metadata/listener"
)

// The fuzz targets here reach the metadata code only through what a peer
// controls and what is least likely to change shape: the RPC frame reader
// (readFrame into the request and response types), and the FSM through
// raft.FSM (Apply, Snapshot, Restore). Seeds are JSON text, not Go
// structs, so that they are what a peer or an old log would send. The
// seed corpora under testdata/fuzz are regenerated with
//
//	KB_WRITE_FUZZ_CORPUS=1 go test -run TestWriteMetadataFuzzCorpus ./metadata

// fuzzTopicID is the topic id the seed records use, as JSON.
const fuzzTopicID = "[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]"

// fuzzPrelude is a valid record sequence: three brokers, a cluster id,
// a three-partition topic. The FSM fuzzer applies it first, so that the
// fuzzed records find brokers, a topic and partitions to act on.
var fuzzPrelude = []string{
	`{"type":9,"version":1,"payload":{"clusterId":"fuzz-cluster"}}`,
	`{"type":1,"version":1,"payload":{"brokerId":1,"incarnationId":"i1","endpoints":[{"Listener":"PLAINTEXT","Host":"h","Port":9092,"SecurityProtocol":"PLAINTEXT"}]}}`,
	`{"type":1,"version":1,"payload":{"brokerId":2,"incarnationId":"i2","endpoints":[{"Listener":"PLAINTEXT","Host":"h","Port":9093,"SecurityProtocol":"PLAINTEXT"}],"rack":"r1"}}`,
	`{"type":1,"version":1,"payload":{"brokerId":3,"incarnationId":"i3","endpoints":[]}}`,
	`{"type":3,"version":1,"payload":{"brokerId":1,"brokerEpoch":2}}`,
	`{"type":4,"version":1,"payload":{"name":"events","topicId":` + fuzzTopicID + `,"partitions":[` +
		`{"partition":0,"replicas":[1,2,3],"isr":[1,2,3],"leader":1},` +
		`{"partition":1,"replicas":[2,3,1],"isr":[2,3],"leader":2},` +
		`{"partition":2,"replicas":[3],"isr":[3],"leader":3}],"configs":{"cleanup.policy":"compact"}}}`,
}

// fuzzRecords are one record of every type, most of them valid after the
// prelude. Fuzz inputs are records separated by newlines.
var fuzzRecords = map[string]string{
	"fence":             `{"type":2,"version":1,"payload":{"brokerId":2,"brokerEpoch":3,"uncleanTopics":[` + fuzzTopicID + `]}}`,
	"unfence":           `{"type":3,"version":1,"payload":{"brokerId":3,"brokerEpoch":4}}`,
	"delete-topic":      `{"type":5,"version":1,"payload":{"topicId":` + fuzzTopicID + `}}`,
	"partition-change":  `{"type":6,"version":1,"payload":{"topicId":` + fuzzTopicID + `,"partition":0,"leader":2,"isr":[2,3],"leaderEpoch":0,"partitionEpoch":0}}`,
	"config-change":     `{"type":7,"version":1,"payload":{"topicId":` + fuzzTopicID + `,"set":{"retention.ms":"1000"},"remove":["cleanup.policy"]}}`,
	"cluster-config":    `{"type":7,"version":1,"payload":{"cluster":true,"set":{"message.max.bytes":"2000000"}}}`,
	"producer-id-block": `{"type":8,"version":1,"payload":{"brokerId":1,"firstProducerId":0,"count":1000}}`,
	"create-partitions": `{"type":10,"version":1,"payload":{"topicId":` + fuzzTopicID + `,"partitions":[{"partition":3,"replicas":[1,2],"isr":[1,2],"leader":1}]}}`,
	"unknown-type":      `{"type":200,"version":1,"payload":{}}`,
	"future-version":    `{"type":1,"version":99,"payload":{}}`,
	"sequence": strings.Join([]string{
		`{"type":6,"version":1,"payload":{"topicId":` + fuzzTopicID + `,"partition":1,"leader":3,"isr":[3],"leaderEpoch":0,"partitionEpoch":0}}`,
		`{"type":2,"version":1,"payload":{"brokerId":3,"brokerEpoch":4}}`,
		`{"type":5,"version":1,"payload":{"topicId":` + fuzzTopicID + `}}`,
	}, "\n"),
}

func newFuzzFSM() raft.FSM { return newFSM(slog.New(slog.DiscardHandler)) }

// applyLines applies each newline-separated entry of data as a command at
// the next index.
func applyLines(f raft.FSM, index *uint64, data []byte) {
	for _, line := range bytes.Split(data, []byte("\n")) {
		*index++
		f.Apply(&raft.Log{Type: raft.LogCommand, Index: *index, Data: line})
	}
}

// FuzzFSMApply applies arbitrary records after a valid prelude: whatever
// they are, Apply must not panic, and the resulting state must survive a
// snapshot and a restore unchanged (the same snapshot bytes) and keep
// applying records.
func FuzzFSMApply(f *testing.F) {
	for _, r := range fuzzRecords {
		f.Add([]byte(r))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fsm := newFuzzFSM()
		var index uint64
		applyLines(fsm, &index, []byte(strings.Join(fuzzPrelude, "\n")))
		applyLines(fsm, &index, data)
		snap := persist(t, fsm)

		restored := newFuzzFSM()
		if err := restored.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
			t.Fatalf("restoring our own snapshot: %v", err)
		}
		if again := persist(t, restored); !bytes.Equal(again, snap) {
			t.Fatalf("snapshot changed across restore:\n%s\n%s", snap, again)
		}
		applyLines(restored, &index, data)
	})
}

// FuzzFSMRestore restores arbitrary snapshot bytes: Restore must not
// panic, and an image it accepts must take records and snapshot again
// without panicking.
func FuzzFSMRestore(f *testing.F) {
	for _, s := range snapshotSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fsm := newFuzzFSM()
		if err := fsm.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
			return
		}
		index := uint64(1 << 20)
		applyLines(fsm, &index, []byte(strings.Join(fuzzPrelude, "\n")))
		for _, r := range fuzzRecords {
			applyLines(fsm, &index, []byte(r))
		}
		persist(t, fsm)
	})
}

// snapshotSeeds are snapshots of the prelude followed by each record.
func snapshotSeeds(tb testing.TB) map[string][]byte {
	seeds := map[string][]byte{}
	for name, r := range fuzzRecords {
		fsm := newFuzzFSM()
		var index uint64
		applyLines(fsm, &index, []byte(strings.Join(fuzzPrelude, "\n")))
		applyLines(fsm, &index, []byte(r))
		seeds[name] = persist(tb, fsm)
	}
	return seeds
}

// persist returns the bytes of a snapshot of f.
func persist(tb testing.TB, f raft.FSM) []byte {
	tb.Helper()
	s, err := f.Snapshot()
	if err != nil {
		tb.Fatal(err)
	}
	defer s.Release()
	var sink memSink
	if err := s.Persist(&sink); err != nil {
		tb.Fatalf("persist: %v", err)
	}
	return sink.Bytes()
}

// memSink is a raft.SnapshotSink in memory.
type memSink struct{ bytes.Buffer }

func (*memSink) ID() string    { return "fuzz" }
func (*memSink) Cancel() error { return nil }
func (*memSink) Close() error  { return nil }

// FuzzRPCFrame reads controller RPC frames from arbitrary bytes, as both
// ends do (requests on the server, responses on the client): no panic, no
// allocation past the frame bound, and a frame that decodes re-encodes to
// a frame that decodes to the same value.
func FuzzRPCFrame(f *testing.F) {
	for _, s := range rpcSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var req listener.Request
		if err := listener.ReadFrame(bytes.NewReader(data), &req); err == nil {
			var buf bytes.Buffer
			if err := listener.WriteFrame(&buf, &req); err != nil {
				t.Fatalf("re-encoding %+v: %v", req, err)
			}
			var again listener.Request
			if err := listener.ReadFrame(&buf, &again); err != nil {
				t.Fatalf("re-reading: %v", err)
			}
			if again.Op != req.Op || again.TimeoutMs != req.TimeoutMs {
				t.Fatalf("round trip: %+v then %+v", req, again)
			}
		}
		var resp listener.Response
		if err := listener.ReadFrame(bytes.NewReader(data), &resp); err == nil && resp.Error != nil {
			_ = fromWire(resp.Error).Error()
		}
		var list errorList
		_ = json.Unmarshal(data, &list)
	})
}

// rpcSeeds are request and response frames as the controller RPC sends
// them.
func rpcSeeds() map[string][]byte {
	frame := func(s string) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(s))), s...)
	}
	return map[string][]byte{
		"create-topics": frame(`{"op":"CreateTopics","timeoutMs":4800,"payload":{"topics":[{"name":"t","partitions":3,"replicationFactor":1}]}}`),
		"heartbeat":     frame(`{"op":"Heartbeat","payload":{"brokerId":1,"brokerEpoch":5}}`),
		"read-index":    frame(`{"op":"ReadIndex","timeoutMs":100,"payload":null}`),
		"result":        frame(`{"result":{"offset":42}}`),
		"error":         frame(`{"error":{"code":"NOT_CONTROLLER","message":"not the controller","leader":"h:9093"}}`),
		"error-list":    frame(`{"result":[null,{"code":"TOPIC_ALREADY_EXISTS","message":"exists"},{"code":"SOMETHING_NEW","message":"?"}]}`),
		"too-large":     binary.BigEndian.AppendUint32(nil, listener.MaxFrame+1),
	}
}

// TestWriteMetadataFuzzCorpus writes the seed corpora in Go's corpus file
// format.
func TestWriteMetadataFuzzCorpus(t *testing.T) {
	if os.Getenv("KB_WRITE_FUZZ_CORPUS") == "" {
		t.Skip("set KB_WRITE_FUZZ_CORPUS=1 to regenerate testdata/fuzz")
	}
	write := func(fuzzName, name string, data []byte) {
		dir := filepath.Join("testdata", "fuzz", fuzzName)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		content := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, r := range fuzzRecords {
		write("FuzzFSMApply", name, []byte(r))
	}
	for name, s := range snapshotSeeds(t) {
		write("FuzzFSMRestore", name, s)
	}
	for name, s := range rpcSeeds() {
		write("FuzzRPCFrame", name, s)
	}
}
