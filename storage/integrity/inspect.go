package integrity

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/kbroker/kbroker/storage/logfs"
	"github.com/kbroker/kbroker/wire/record"
)

// ReadLogBelow returns the bytes of the partition directory's segments, in
// base-offset order and concatenated, up to (not including) the first
// batch whose base offset is >= offset. Tests and the chaos checker use it
// to compare replicas byte for byte below the high watermark; it reads the
// files directly, so a running broker may append past offset meanwhile.
// A batch below offset that does not parse is an error; a torn last
// batch ends the log, as recovery would cut it.
func ReadLogBelow(dir string, offset int64) ([]byte, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var bases []int64
	for _, e := range ents {
		if base, ok := logfs.ParseFileName(e.Name(), logfs.LogSuffix); ok && !e.IsDir() {
			bases = append(bases, base)
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	var all []byte
	for _, base := range bases {
		data, err := os.ReadFile(filepath.Join(dir, filepath.Base(logfs.FileName(dir, base, logfs.LogSuffix))))
		if err != nil {
			return nil, err
		}
		all = append(all, data...)
	}
	pos, rest := 0, all
	for len(rest) > 0 {
		b, next, err := record.Parse(rest)
		if errors.Is(err, record.ErrTruncated) {
			break // a torn tail, as recovery would cut it
		}
		if err != nil {
			return all[:pos], fmt.Errorf("%s: unparseable batch at byte %d, below offset %d: %w", dir, pos, offset, err)
		}
		if b.BaseOffset() >= offset {
			break
		}
		pos += len(b)
		rest = next
	}
	return all[:pos], nil
}
