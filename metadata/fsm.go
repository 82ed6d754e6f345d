package metadata

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
	"github.com/kbroker/kbroker/metadata/access"
)

// fsm is the raft.FSM of the metadata log. Raft calls Apply, Snapshot and
// Restore from its one FSM goroutine (Restore also from NewRaft, before
// that goroutine starts); FSMSnapshot.Persist runs on another goroutine and
// only reads an immutable Image.
type fsm struct {
	log *slog.Logger

	mu  sync.Mutex // serializes publish
	cur atomic.Pointer[published]
}

// published is the current image and the channel closed when it is
// replaced. They are swapped together so that a reader of Changed() never
// misses an update.
type published struct {
	image   *Image
	changed chan struct{}
}

func newFSM(log *slog.Logger) *fsm {
	f := &fsm{log: log}
	f.cur.Store(&published{image: emptyImage(), changed: make(chan struct{})})
	return f
}

func (f *fsm) image() *Image { return f.cur.Load().image }

func (f *fsm) changed() <-chan struct{} { return f.cur.Load().changed }

// publish makes img the current image and wakes the watchers.
func (f *fsm) publish(img *Image) {
	f.mu.Lock()
	defer f.mu.Unlock()
	old := f.cur.Swap(&published{image: img, changed: make(chan struct{})})
	close(old.changed)
}

// Apply implements raft.FSM. It returns nil, an error (record rejected) or
// a value for the proposer (see applyEntry).
func (f *fsm) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	next, res := applyEntry(f.image(), l.Index, l.Data)
	if err, ok := res.(error); ok {
		f.log.Debug("metadata record rejected", "index", l.Index, "err", err)
	}
	f.publish(next)
	return res
}

// ApplyBatch implements raft.BatchingFSM: raft hands over up to
// MaxAppendEntries committed entries at once. They are applied as Apply
// would apply them one by one (the same images, the same results), but
// the topic maps are copied once for the batch (Image.ownTopicMaps) and
// only the last image is published: a burst of partition changes (a
// broker rejoining every ISR) costs O(topics) per batch, not per record.
// Entries other than commands (configuration changes) get nil.
func (f *fsm) ApplyBatch(logs []*raft.Log) []any {
	next, res := applyBatch(f.image(), logs)
	for i, r := range res {
		if err, ok := r.(error); ok {
			f.log.Debug("metadata record rejected", "index", logs[i].Index, "err", err)
		}
	}
	if next != nil {
		f.publish(next)
	}
	return res
}

// applyBatch applies the commands among logs to img in order. It returns
// the image after the last one (nil if there was none) and one result per
// entry. img is not changed; the images between are never seen outside.
func applyBatch(img *Image, logs []*raft.Log) (*Image, []any) {
	res := make([]any, len(logs))
	cur := img.next(img.Offset)
	cur.batch, cur.topicsOwner = &batchToken{}, nil
	applied := false
	for i, l := range logs {
		if l.Type != raft.LogCommand {
			continue
		}
		cur, res[i] = applyEntry(cur, l.Index, l.Data)
		applied = true
	}
	if !applied {
		return nil, res
	}
	cur.batch, cur.topicsOwner = nil, nil
	return cur, res
}

// Snapshot implements raft.FSM: the current image is immutable, so the
// snapshot is just a reference to it.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	return &fsmSnapshot{image: f.image()}, nil
}

// Restore implements raft.FSM: it replaces the image with the snapshot's.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	img, err := readSnapshot(rc)
	if err != nil {
		return err
	}
	f.publish(img)
	return nil
}

type fsmSnapshot struct{ image *Image }

func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := writeSnapshot(sink, s.image); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s *fsmSnapshot) Release() {}

// checkSnapshots refuses a retained snapshot whose format this build does
// not read, naming it: raft would skip it for an older one (or fail
// without saying which), and the node would run on older state.
func checkSnapshots(snaps raft.SnapshotStore, dir string) error {
	metas, err := snaps.List()
	if err != nil {
		return fmt.Errorf("metadata: list snapshots: %w", err)
	}
	for _, m := range metas {
		path := filepath.Join(dir, "snapshots", m.ID, "state.bin")
		_, rc, err := snaps.Open(m.ID)
		if err != nil {
			return fmt.Errorf("metadata: snapshot %s: %w", path, err)
		}
		// The version is the document's first field: no need to read on.
		var v int
		dec := json.NewDecoder(rc)
		_, err = dec.Token()
		if key, kerr := dec.Token(); err == nil && kerr == nil && key == "version" {
			err = dec.Decode(&v)
		}
		rc.Close()
		if err != nil {
			return fmt.Errorf("metadata: snapshot %s: no format version: %w", path, err)
		}
		if v < snapshotVersionBaseline || v > snapshotVersion {
			return fmt.Errorf("metadata: snapshot %s has format %d, this build reads %d-%d: %w",
				path, v, snapshotVersionBaseline, snapshotVersion, ErrUnsupportedRecord)
		}
	}
	return nil
}

// The snapshot formats: 2 adds the finalized feature levels, and is
// written only once the cluster finalized some (metadata.version 2), so
// that a build before feature levels reads the snapshots of a cluster it
// can run. A format above snapshotVersion is refused.
const (
	snapshotVersionBaseline = 1
	snapshotVersion         = 2
)

// snapshotFile is a snapshot: the whole image as one JSON document, with
// brokers sorted by id and topics by name (so equal images give equal
// bytes). TopicsByID is rebuilt on restore.
type snapshotFile struct {
	Version        int       `json:"version"`
	Offset         uint64    `json:"offset"`
	ClusterID      string    `json:"clusterId"`
	NextProducerID int64     `json:"nextProducerId"`
	Brokers        []*Broker `json:"brokers"`
	Topics         []*Topic  `json:"topics"`
	// ClusterConfigs: added later in version 1; absent means none.
	ClusterConfigs map[string]string `json:"clusterConfigs,omitempty"`
	// BrokerConfigs: the per-broker dynamic configs by broker id (JSON
	// sorts the keys); added later in version 1, absent means none.
	BrokerConfigs map[int32]map[string]string `json:"brokerConfigs,omitempty"`
	// GroupConfigs: the GROUP config resources by group id; added later
	// in version 2, absent means none.
	GroupConfigs map[string]map[string]string `json:"groupConfigs,omitempty"`
	// ACLs (sorted as ACLs.All), ACLVersion and Scram (sorted by user and
	// mechanism): added later in version 1; absent means none.
	ACLs       []*ACL             `json:"acls,omitempty"`
	ACLVersion uint64             `json:"aclVersion,omitempty"`
	Scram      []*ScramCredential `json:"scram,omitempty"`
	// Quotas sorted by entity: added later in version 1; absent means none.
	Quotas []QuotaEntry `json:"quotas,omitempty"`
	// Tokens sorted by id: delegation tokens, metadata.version 4 only;
	// absent means none.
	Tokens []*DelegationToken `json:"delegationTokens,omitempty"`
	// Features and FeaturesEpoch: version 2 only.
	Features      map[string]int16 `json:"features,omitempty"`
	FeaturesEpoch int64            `json:"featuresEpoch,omitempty"`
	// RemoteSegments: version 2, written from metadata.version 5 on (an
	// older cluster has none); absent means none.
	RemoteSegments []remotePartitionSegments `json:"remoteSegments,omitempty"`
}

func writeSnapshot(w io.Writer, img *Image) error {
	sf := snapshotFile{
		Version:        snapshotVersionBaseline,
		Offset:         img.Offset,
		ClusterID:      img.ClusterID,
		NextProducerID: img.NextProducerID,
		Brokers: slices.SortedFunc(maps.Values(img.Brokers), func(a, b *Broker) int {
			return cmp.Compare(a.ID, b.ID)
		}),
		Topics:         sortedTopics(img),
		ClusterConfigs: img.ClusterConfigs,
		BrokerConfigs:  img.BrokerConfigs,
		GroupConfigs:   img.GroupConfigs,
		ACLs:           img.ACLs.All(),
		ACLVersion:     img.ACLVersion,
		Scram:          img.ScramCredentials(),
		Quotas:         img.QuotaEntries(),
		Tokens:         img.DelegationTokens(),
		RemoteSegments: sortedRemote(img),
	}
	if img.features != nil {
		sf.Version, sf.Features, sf.FeaturesEpoch = snapshotVersion, img.features, img.featuresEpoch
	}
	if err := json.NewEncoder(w).Encode(&sf); err != nil {
		return fmt.Errorf("metadata: write snapshot: %w", err)
	}
	return nil
}

// sortedTopics returns the topics of img by name.
func sortedTopics(img *Image) []*Topic {
	names := img.SortedTopicNames()
	out := make([]*Topic, len(names))
	for i, name := range names {
		out[i] = img.Topics[name]
	}
	return out
}

func readSnapshot(r io.Reader) (*Image, error) {
	var sf snapshotFile
	if err := json.NewDecoder(r).Decode(&sf); err != nil {
		return nil, fmt.Errorf("metadata: read snapshot: %w", err)
	}
	if sf.Version < snapshotVersionBaseline || sf.Version > snapshotVersion {
		return nil, fmt.Errorf("metadata: snapshot format %d, this build reads %d-%d: %w", sf.Version, snapshotVersionBaseline, snapshotVersion, ErrUnsupportedRecord)
	}
	img := emptyImage()
	img.features, img.featuresEpoch = sf.Features, sf.FeaturesEpoch
	img.Offset = sf.Offset
	for _, r := range sf.RemoteSegments {
		if img.remote == nil {
			img.remote = map[RemotePartition][]*RemoteSegment{}
		}
		img.remote[r.RemotePartition] = r.Segments
	}
	img.ClusterConfigs = sf.ClusterConfigs
	img.BrokerConfigs = sf.BrokerConfigs
	img.GroupConfigs = sf.GroupConfigs
	img.ClusterID = sf.ClusterID
	img.NextProducerID = sf.NextProducerID
	for _, b := range sf.Brokers {
		img.Brokers[b.ID] = b
	}
	for _, t := range sf.Topics {
		img.Topics[t.Name] = t
		img.TopicsByID[t.ID] = t
	}
	img.reindex()
	if len(sf.ACLs) > 0 {
		byID := make(map[[16]byte]*ACL, len(sf.ACLs))
		for _, a := range sf.ACLs {
			byID[a.ID] = a
		}
		img.ACLs = access.IndexACLs(byID)
	}
	img.ACLVersion = sf.ACLVersion
	for _, c := range sf.Scram {
		if img.Scram == nil {
			img.Scram = map[ScramKey]*ScramCredential{}
		}
		img.Scram[c.Key()] = c
	}
	for _, t := range sf.Tokens {
		if img.Tokens == nil {
			img.Tokens = map[string]*DelegationToken{}
		}
		img.Tokens[t.TokenID] = t
	}
	for _, q := range sf.Quotas {
		if img.Quotas == nil {
			img.Quotas = map[QuotaEntity]map[string]float64{}
		}
		img.Quotas[q.Entity] = q.Values
	}
	return img, nil
}
