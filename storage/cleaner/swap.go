package cleaner

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/kbroker/kbroker/storage/logfs"
)

const (
	// CleanedSuffix marks the files of a segment being rewritten by the
	// cleaner; leftovers of a crash are removed at open.
	CleanedSuffix = ".cleaned"
	// SwapSuffix marks a cleaned segment's files about to replace the
	// originals. A <base>.log.swap is the commit point: open finishes
	// the swap of a segment that has one and discards .swap index files
	// without one.
	SwapSuffix = ".swap"
)

// RecoverSwaps runs at a log's open, before its segments are listed (names
// are the entries of its directory dir): it removes
// .cleaned files, finishes each swap whose <base>.log.swap exists (the
// commit point was passed) by renaming its .swap files over the
// originals, and removes .swap files of swaps that were not committed.
// It blocks on the file system; nothing else uses the log's files yet.
func RecoverSwaps(fsys logfs.FS, dir string, names []string) (changed bool, err error) {
	committed := map[int64]bool{}
	for _, name := range names {
		if off, ok := logfs.ParseFileName(strings.TrimSuffix(name, SwapSuffix), logfs.LogSuffix); ok && strings.HasSuffix(name, SwapSuffix) {
			committed[off] = true
		}
	}
	var errs []error
	// Index files first, the .log last, as the swap renames them.
	for _, suffix := range []string{logfs.IndexSuffix, logfs.TimeIndexSuffix, logfs.TxnIndexSuffix, logfs.LogSuffix} {
		for _, name := range names {
			path := filepath.Join(dir, name)
			switch {
			case strings.HasSuffix(name, CleanedSuffix):
				if suffix == logfs.LogSuffix { // once
					changed = true
					if err := fsys.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
						errs = append(errs, err)
					}
				}
			case strings.HasSuffix(name, SwapSuffix):
				off, ok := logfs.ParseFileName(strings.TrimSuffix(name, SwapSuffix), suffix)
				if !ok {
					continue
				}
				changed = true
				if committed[off] {
					err = fsys.Rename(path, strings.TrimSuffix(path, SwapSuffix))
				} else {
					err = fsys.Remove(path)
				}
				if err != nil && !errors.Is(err, os.ErrNotExist) {
					errs = append(errs, err)
				}
			}
		}
	}
	if changed {
		errs = append(errs, fsys.SyncDir(dir))
	}
	return changed, errors.Join(errs...)
}
