package storage

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// recoveryPointFile is the per-directory checkpoint of recovery points, in
// Kafka's text format:
//
//	0                  version
//	2                  number of entries
//	orders 0 1234      topic partition offset
//	orders 1 99
const recoveryPointFile = "recovery-point-offset-checkpoint"

type topicPartition struct {
	topic     string
	partition int32
}

func (tp topicPartition) dirName() string { return fmt.Sprintf("%s-%d", tp.topic, tp.partition) }

// parseDirName splits "<topic>-<partition>" at the last dash.
func parseDirName(name string) (topicPartition, bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return topicPartition{}, false
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 {
		return topicPartition{}, false
	}
	return topicPartition{name[:i], int32(p)}, true
}

func encodeCheckpoint(offsets map[topicPartition]int64) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "0\n%d\n", len(offsets))
	for tp, off := range offsets {
		fmt.Fprintf(&b, "%s %d %d\n", tp.topic, tp.partition, off)
	}
	return b.Bytes()
}

func decodeCheckpoint(data []byte) (map[topicPartition]int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	line := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		return sc.Text(), true
	}
	v, ok := line()
	if n, err := strconv.Atoi(strings.TrimSpace(v)); ok && err == nil && n > 0 {
		return nil, fmt.Errorf("%w: checkpoint version %d, this build reads 0", ErrNewerFormat, n)
	}
	if !ok || strings.TrimSpace(v) != "0" {
		return nil, fmt.Errorf("checkpoint: bad version line %q", v)
	}
	c, ok := line()
	n, err := strconv.Atoi(strings.TrimSpace(c))
	if !ok || err != nil || n < 0 {
		return nil, fmt.Errorf("checkpoint: bad count line %q", c)
	}
	out := make(map[topicPartition]int64, n)
	for range n {
		s, ok := line()
		f := strings.Fields(s)
		if !ok || len(f) != 3 {
			return nil, fmt.Errorf("checkpoint: bad entry %q", s)
		}
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		off, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("checkpoint: bad entry %q", s)
		}
		out[topicPartition{f[0], int32(p)}] = off
	}
	return out, nil
}
