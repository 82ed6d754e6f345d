package clustercheck

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kbroker/kbroker/wire/record"
)

func recs(p int32, vals ...string) []Record {
	out := make([]Record, len(vals))
	for i, v := range vals {
		out[i] = Record{p, int64(i), v}
	}
	return out
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name  string
		acks  [][3]any // partition, offset, value
		final map[int32][]Record
		ends  map[int32]int64
		want  map[string]string // finding kind -> substring of its only line
	}{
		{name: "every ack at its offset",
			acks:  [][3]any{{0, 0, "a"}, {0, 1, "b"}, {1, 0, "c"}},
			final: map[int32][]Record{0: recs(0, "a", "b", "x"), 1: recs(1, "c")},
			ends:  map[int32]int64{0: 3, 1: 1}},
		{name: "lost",
			acks:  [][3]any{{0, 0, "a"}, {0, 1, "b"}},
			final: map[int32][]Record{0: recs(0, "a")},
			want:  map[string]string{"lost": `"b" acknowledged at p0@1, not in the final read (p0@1 holds nothing)`}},
		{name: "overwritten is lost",
			acks:  [][3]any{{0, 1, "b"}},
			final: map[int32][]Record{0: recs(0, "a", "z")},
			want:  map[string]string{"lost": `p0@1 holds "z"`}},
		{name: "misplaced",
			acks:  [][3]any{{0, 0, "a"}, {0, 1, "b"}},
			final: map[int32][]Record{0: recs(0, "a", "z"), 1: recs(1, "b")},
			want:  map[string]string{"misplaced": `"b" acknowledged at p0@1, read at [p1@0]`}},
		{name: "duplicated",
			acks:  [][3]any{{0, 0, "a"}},
			final: map[int32][]Record{0: recs(0, "a", "a")},
			want:  map[string]string{"duplicated": `"a" at [p0@0 p0@1]`}},
		{name: "offset gap",
			final: map[int32][]Record{0: {{0, 0, "a"}, {0, 2, "b"}}},
			want:  map[string]string{"gaps": "record #1 has offset 2"}},
		{name: "short of the end offset",
			final: map[int32][]Record{0: recs(0, "a")},
			ends:  map[int32]int64{0: 2},
			want:  map[string]string{"gaps": "final read has 1 records for end offset 2"}},
		{name: "one offset acknowledged twice",
			acks:  [][3]any{{0, 0, "a"}, {0, 0, "b"}},
			final: map[int32][]Record{0: recs(0, "b")},
			want:  map[string]string{"conflicts": `p0@0 acknowledged as "a" and as "b"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := NewAcks()
			for _, k := range tc.acks {
				a.Ack(int32(k[0].(int)), int64(k[1].(int)), k[2].(string))
			}
			r := Check(a, tc.final, tc.ends)
			got := map[string][]string{"lost": r.Lost, "misplaced": r.Misplaced, "duplicated": r.Duplicated,
				"gaps": r.Gaps, "conflicts": r.Conflicts}
			for kind, lines := range got {
				want, ok := tc.want[kind]
				switch {
				case !ok && len(lines) > 0:
					t.Errorf("%s: %q, want none", kind, lines)
				case ok && (len(lines) != 1 || !strings.Contains(lines[0], want)):
					t.Errorf("%s: %q, want one line with %q", kind, lines, want)
				}
			}
			if len(tc.want) == 0 && len(r.Violations()) > 0 {
				t.Errorf("violations %q", r.Violations())
			}
		})
	}
}

func TestLongestGaps(t *testing.T) {
	base := time.Unix(1000, 0)
	at := func(s float64) time.Time { return base.Add(time.Duration(s * float64(time.Second))) }
	// p0 acks at 0, 1, 1.99, 9, 20; p1 at 0, 3, 4, 12; kill at 2, pause
	// at 10, end at 21. Gaps and the fault each belongs to:
	//   p0 0-1, 1-1.99: before any fault
	//   p0 1.99-9 (7.01s): the kill was injected inside it
	//   p0 9-20 (11s): the pause was injected inside it
	//   p0 20-21: the pause is the most recent fault
	//   p1 0-3 kill (inside), 3-4 kill (most recent), 4-12 pause, 12-21 pause
	var acks []Ack
	for _, s := range []float64{0, 1, 1.99, 9, 20} {
		acks = append(acks, Ack{0, at(s)})
	}
	for _, s := range []float64{0, 3, 4, 12} {
		acks = append(acks, Ack{1, at(s)})
	}
	faults := []Fault{{"pause", at(10)}, {"kill", at(2)}} // any order
	got := LongestGaps(acks, faults, at(21))
	want := map[string]Gap{
		"":      {"", 0, at(0), at(1)},
		"kill":  {"kill", 0, at(1.99), at(9)},
		"pause": {"pause", 0, at(9), at(20)},
	}
	if len(got) != len(want) {
		t.Errorf("kinds %v, want %v", got, want)
	}
	for kind, w := range want {
		if g := got[kind]; g != w {
			t.Errorf("%q: %+v, want %+v", kind, g, w)
		}
	}
	// A partition silent until the end has its gap counted to the end.
	got = LongestGaps([]Ack{{2, at(0)}}, []Fault{{"kill", at(1)}}, at(30))
	if g := got["kill"]; g.Partition != 2 || g.Duration() != 30*time.Second {
		t.Errorf("trailing gap %+v", g)
	}
}

// writeSegment writes batches of values as partition p's only segment in
// logDir.
func writeSegment(t *testing.T, logDir, topic string, p int32, epoch int32, batches ...[]string) {
	t.Helper()
	dir := PartitionDir(logDir, topic, p)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var data []byte
	off := int64(0)
	for _, vals := range batches {
		rs := make([]record.Record, len(vals))
		for i, v := range vals {
			rs[i] = record.Record{OffsetDelta: int32(i), Value: []byte(v)}
		}
		b, err := record.Build(record.BatchSpec{BaseOffset: off, PartitionLeaderEpoch: epoch, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, BaseTimestamp: 1}, rs)
		if err != nil {
			t.Fatal(err)
		}
		data = append(data, b...)
		off += int64(len(vals))
	}
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%020d.log", 0)), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCompareReplicas(t *testing.T) {
	tests := []struct {
		name string
		hw   int64
		// node 2's log; node 1 and 3 hold [a b] [c] at epoch 1
		epoch2   int32
		batches2 [][]string
		want     string // "" for identical
	}{
		{"identical", 3, 1, [][]string{{"a", "b"}, {"c"}}, ""},
		{"identical below the high watermark", 2, 1, [][]string{{"a", "b"}, {"x", "y"}}, ""},
		{"different epoch", 3, 2, [][]string{{"a", "b"}, {"c"}}, "node 1 and node 2 differ below the high watermark 3"},
		{"short replica", 3, 1, [][]string{{"a", "b"}}, "p0 node 2: log below the high watermark 3 ends at offset 1, want 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dirs := map[int32]string{1: t.TempDir(), 2: t.TempDir(), 3: t.TempDir()}
			writeSegment(t, dirs[1], "t", 0, 1, []string{"a", "b"}, []string{"c"})
			writeSegment(t, dirs[2], "t", 0, tc.epoch2, tc.batches2...)
			writeSegment(t, dirs[3], "t", 0, 1, []string{"a", "b"}, []string{"c"})
			logs, err := ReplicaLogs(dirs, "t", 0, tc.hw)
			if err != nil {
				t.Fatal(err)
			}
			err = CompareReplicas(logs, 0, tc.hw)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("replicas differ: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("CompareReplicas = %v, want %q", err, tc.want)
			}
		})
	}
}
